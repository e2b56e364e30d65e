-- Fair turns (docs/groups.md "Fair turns"): a READY task of a lane is scored behind the head of its
-- priority and after its lane's last turn there, so lanes take turns one task each.

-- The most priorities a lane's record keeps its last turn for.
local LAST_BANDS_MAX = 4

local fronts = {}

-- The virtual time of the head of a priority in the ready set (its score's low part), or false
-- when none of that priority is READY. Read once per priority per script.
local function front_of(band)
  local known = fronts[band]
  if known ~= nil then return known end
  local head = redis.call('ZRANGEBYSCORE', K.ready, fmt(band * RANK_SEQ_SPAN), '(' .. fmt((band + 1) * RANK_SEQ_SPAN),
    'WITHSCORES', 'LIMIT', 0, 1)
  known = #head > 0 and tonumber(head[2]) - band * RANK_SEQ_SPAN
  fronts[band] = known
  return known
end

local function band_of(rank)
  return math.floor(tonumber(rank) / RANK_SEQ_SPAN)
end

-- The arrival counter as it stands (GET, once per script): no virtual time given so far is above
-- it by more than a few, so it starts a priority that has nothing READY without going back.
local seq_known = nil
local function seq_now()
  if not seq_known then seq_known = tonumber(redis.call('GET', K.seq)) or 0 end
  return seq_known
end

-- The head of a priority, or, when none of it is READY, where its next round starts: `seed` (an
-- enqueue's arrival before its batch), else the arrival counter.
local function front_or_start(band, seed)
  local front = front_of(band)
  if front then return front end
  front = seed or seq_now()
  fronts[band] = front
  return front
end

-- The ready-set score right behind the head of a rank's priority: where tasks let out or returned go.
local function behind_front(rank)
  local band = band_of(rank)
  return band * RANK_SEQ_SPAN + front_or_start(band) + 1
end

-- The lane's last virtual time at priority `band`, or nil. `last` holds full ready-set scores
-- (priority band and virtual time in one number), one per band, the newest first; the common lane
-- has one, kept as a number (`last_score`) while a script works on it, printed once when written.
local function last_of(record, band)
  local score = record.last_score
  if not score then
    local last = record.last
    if last == '' then return nil end
    score = tonumber(last)
    if not score then -- several bands: "<score>,<score>,..."
      for entry in string.gmatch(last, '%d+') do
        local n = tonumber(entry)
        if math.floor(n / RANK_SEQ_SPAN) == band then return n - band * RANK_SEQ_SPAN end
      end
      return nil
    end
    record.last_score = score
  end
  if math.floor(score / RANK_SEQ_SPAN) == band then return score - band * RANK_SEQ_SPAN end
  return nil
end

-- Records `time` as the lane's last at `band`: newest first, at most LAST_BANDS_MAX bands.
local function set_last(record, band, time)
  local score = band * RANK_SEQ_SPAN + time
  local known = record.last_score or (record.last == '' and score) or tonumber(record.last)
  if known and math.floor(known / RANK_SEQ_SPAN) == band then
    record.last_score = score -- the one band it had: printed by lanes_flush
    return
  end
  local entries = { fmt(score) }
  for entry in string.gmatch(record.last_score and fmt(record.last_score) or record.last, '%d+') do
    if #entries >= LAST_BANDS_MAX then break end
    if math.floor(tonumber(entry) / RANK_SEQ_SPAN) ~= band then entries[#entries + 1] = entry end
  end
  record.last, record.last_score = table.concat(entries, ','), nil
end

-- A new task's turn in its lane: right behind the head of its priority (a lane's first task runs in
-- the next round), and after its lane's last at that priority, which it becomes. With none of its
-- priority READY, `seed` (an enqueue's arrival before its batch) or the arrival counter starts the
-- round, so the virtual time of a priority never goes back.
local function fair_turn(record, band, seed)
  local front = front_or_start(band, seed)
  local last = last_of(record, band)
  local turn = (last and last > front) and last + 1 or front + 1
  set_last(record, band, turn)
  return turn
end
