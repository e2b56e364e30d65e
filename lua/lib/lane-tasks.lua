-- A lane's tasks coming and going: a task becomes READY at its turn, returns, gives back its slot,
-- fails or leaves its lane for good; the lane's record follows in the same step.

-- A task of a lane becomes READY at its turn (enqueue, a due scheduled task, requeue, repair): into
-- the ready set at its lane's next virtual time, or parked when the lane has parked tasks (it waits
-- its turn behind them, by rank). An ordered lane keeps all its READY tasks parked but one, its
-- head, so they run in rank order whenever they became READY. This one:
-- - is the head at once when it is the lane's only READY task, nothing uses a slot and the lane may
--   run a task now: READY, flagged "u", holding the slot, as a task let out is (no parking);
-- - with `batched` (enqueue: nothing in its call lets a lane out after it), is parked by `writes`
--   when a task holds the lane's slot (the head, a lease, a FAILED task held): it waits its turn,
--   and the caller's one HSET and ZADD carry a batch's parked tasks;
-- - otherwise is parked at once, for a lane_unpark later in the call to see, and the lane given a
--   head if it has none (lane_unpark reads the parked set).
-- Other writes go to `writes`; the caller takes the task out of the set it was in.
local function lane_add(writes, id, state, config, now, batched)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready + 1
  lane_touch(lane, record)
  if group_policy(config, state.type, lane).ordered then
    lanes_verify({ lane })
    if record.slots == '' and record.parked == 0 and lane_room(lane, record, config, now) > 0 then
      return let_out(writes, lane, record, id, state)
    end
    state.letter = 'W'
    ahead_add(record, state.rank)
    record.parked = record.parked + 1
    note_parked(record, state)
    if batched and record.slots ~= '' then
      put_state(writes, id, state)
      zadd(writes, K.grouped, 0, lane_member(lane, state.rank, id))
      return
    end
    redis.call('HSET', K.task, id .. ':s', state_text(state))
    redis.call('ZADD', K.grouped, 0, lane_member(lane, state.rank, id))
    if record.slots == '' then lane_unpark(lane, config, now) end
    return
  end
  if record.parked > 0 then return lane_park(writes, lane, record, id, state) end
  local band = band_of(state.rank)
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band), id)
end

-- A leased (or held) task of a lane is READY again (a retry due now, a release, a reclaim): its
-- slot is free, and it goes right behind the head of its priority, before the rest of its lane;
-- when the lane has parked tasks, or is ordered (it is the lane's head again), it is let out ahead
-- of them ("u"), keeping its slot.
local function lane_return(writes, id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  drop_slot(lane, record, id)
  record.ready = record.ready + 1
  if record.parked > 0 or group_policy(config, state.type, lane).ordered then
    state.flags = state.flags .. 'u'
    add_slot(lane, record, id)
    if record.outs then record.outs = record.outs + 1 end
  end
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, behind_front(state.rank), id)
end

-- Tasks of lanes stopped using their slots (done, failed, retried later, cancelled; `items` of
-- {lane, id}): their lanes read with one HMGET, the slots given back, and the lanes with parked
-- tasks let out what they may, together (lanes_unpark).
local function lanes_release(items, config, now)
  local names = {}
  for i, item in ipairs(items) do names[i] = item.lane end
  lanes_load(names)
  for _, item in ipairs(items) do drop_slot(item.lane, lanes[item.lane], item.id) end
  lanes_unpark(names, config, now)
end

-- One task of a lane stopped using its slot (lanes_release).
local function lane_release(lane, id, config, now)
  lanes_release({ { lane = lane, id = id } }, config, now)
end

-- A task of a group became FAILED (its last attempt, a PermanentError, its stalls): an ordered group
-- with onFailure "hold" keeps waiting behind it (flag h: it keeps its slot, so nothing of the group
-- runs until it is requeued, and runs first, or skipped); any other lets its next task run.
-- `state` is written by the caller.
local function fail_in_lane(state, id, config, now)
  if state.group == '' then return end
  local lane = lane_of(state.type, state.group)
  if group_policy(config, state.type, lane).hold then
    state.flags = 'h'
    local record = lane_get(lane)
    if not has_slot(record, id) then add_slot(lane, record, id) end
  else
    lane_release(lane, id, config, now)
  end
end

-- A parked task (W) leaves grouped for good (cancel, delete): one parked less in its lane's record,
-- or its type's (flag t). Returns its member.
local function parked_gone(id, state)
  local name, member
  if string.find(state.flags, 't', 1, true) then
    name, member = '@' .. state.type, type_member(state.type, state.rank, id)
  else
    name = lane_of(state.type, state.group)
    member = lane_member(name, state.rank, id)
  end
  local record = lane_get(name)
  record.parked = record.parked - 1
  if name ~= '@' .. state.type then ahead_drop(record, state.rank, id) end
  lane_touch(name, record)
  return member
end

-- A READY task of a lane leaves it for good (cancel, delete, quarantine), once it is out of its
-- set (parked_gone for a parked one): its slot (a task let out) is free for the next parked one.
-- `now` nil: unknown (delete), the next claim lets it out.
local function lane_remove(id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready - 1
  if string.find(state.flags, 'u', 1, true) then
    if has_slot(record, id) then drop_slot(lane, record, id) end
  end
  lane_touch(lane, record)
  if record.parked > 0 then
    if now then lane_unpark(lane, config, now) else lane_wait(lane, 0, config) end
  end
end

-- A task is READY again: an ungrouped one by its rank (or, once the queue takes fair turns, in the
-- "|" lane: at its turn, or right behind the head when `returning`); one of a group back into its
-- lane, first (`returning`: it held a slot, as a retry due now, a release or a reclaim) or at its
-- turn (lane_add: a due scheduled task, a requeue, a repair). The caller takes it out of its set.
-- `config` carries fair (config_get).
local function make_ready(writes, id, state, config, now, returning)
  if state.group ~= '' then
    if returning then lane_return(writes, id, state, config, now) else lane_add(writes, id, state, config, now) end
    return
  end
  state.letter = 'R'
  put_state(writes, id, state)
  if config_get(config, 'fair') ~= '1' then
    zadd(writes, K.ready, state.rank, id)
  elseif returning then
    zadd(writes, K.ready, behind_front(state.rank), id)
  else
    local band = band_of(state.rank)
    local record = lane_get(UNGROUPED)
    lane_touch(UNGROUPED, record)
    zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band), id)
  end
end

-- A FAILED task is READY again with a fresh set of attempts, its rank kept (requeue, amend); a task
-- its ordered group waits behind (onFailure hold) runs first, in the slot it kept. Its stalls go.
local function requeue_failed(writes, id, state, config, now, now_text)
  local holding = state.group ~= '' and string.find(state.flags, 'h', 1, true) ~= nil
  state.letter, state.at, state.attempts, state.flags = 'R', now_text, '0', ''
  make_ready(writes, id, state, config, now, holding)
  zrem(writes, K.failed, id)
  drop_field(writes, id .. STALLS)
end

-- The queue takes fair turns from now on (its first task with a group): its tasks without one form
-- the "|" lane. The tasks without a group already waiting keep their places: the lane's last starts
-- at the last of them in the ready set (of its priority; one of another priority may be passed by
-- the first tasks without a group that follow, once).
local function start_fair(config)
  redis.call('HSET', K.config, 'fair', '1')
  config.fair = '1'
  local record = lane_get(UNGROUPED)
  local tail = redis.call('ZRANGE', K.ready, -1, -1, 'WITHSCORES')
  if record.last == '' and #tail > 0 then record.last = tail[2] end
  lane_touch(UNGROUPED, record)
end
