-- _lib.lua: helpers shared by every leaseq script. bin/generate-lua.ts prepends the constants of
-- shared/config.ts (FORMAT_VERSION, ID_MAX_BYTES, TIME_MAX_MS, ...) and this file to each operation
-- script, so each EVAL body is self-contained and every bound is the one TypeScript checks.
--
-- Storage format v1 (docs/storage.md). Every key of the queue comes in KEYS, in the order of
-- shared/keys.ts: task, config, ready, scheduled, leased, done, failed, corrupt, seq, grouped,
-- groups, groupwait.
--   task hash, field <id>     the body, written once at enqueue and dropped at ack:
--                             "1|<enqueuedAtMs>|<type>|<group>|<payload>"
--   task hash, field <id>:s   the state, small, rewritten at every move (absent while a task is
--                             READY and was never claimed):
--                             "<L>|<attempts>|<gen>|<maxAttempts>|<atMs>|<flags>|<rank>|<type>|<group>|<claim>|<error>"
--     L            R ready, S scheduled, L leased, D done, F failed; W ready behind its group's head
--                  (in the grouped set, not in ready)
--     attempts     claims that counted (a release gives one back)
--     gen          the lease generation: +1 at every claim, reclaim and release; the token is "<rank>.<gen>"
--     maxAttempts  the type's policy, recorded at claim (0 before the first claim)
--     atMs         R ready since, S due at, L lease deadline, D/F finished at
--     flags        "s": returned by a reclaim, so the next claim hands it out alone; "o": a lease
--                  claimed under format v0, whose holder has a token of the old form; "h": a
--                  retry of an ordered group, SCHEDULED, that keeps its group's slot meanwhile;
--                  "u": READY, let out of its group's parked tasks to run next (with "s": "su")
--     rank         (priority + 1000) * 2^42 + arrival sequence: an exact integer below 2^53
--     claim        the claim id that leased it (L only): a repeated claim returns the same batch
--   task hash, field <id>:x   why the task was quarantined (ids in the corrupt set only)
--   config hash              v (format version), the queue's settings (configure.lua), nextDue, hold, wake
--   grouped, groups, groupwait  the READY tasks of groups (see "Groups" below, and docs/groups.md)
-- A record written by format v0 ("R|type|rank|attempts|claims|max|atMs|errorBytes|error+payload" in
-- field <id>) is read and rewritten as v1 by whichever script meets it first.
--
-- Speed: Redis runs these scripts on its one thread, and in its Lua a table costs about 0.6 µs, a
-- number printed about 0.5 µs and a long pattern match about 1 µs. So a state's fields stay the
-- text they were read as (numbers are converted only where arithmetic needs them), error messages
-- are built only when there is an error, and a batch's writes end as one command per key.

local RANK_SEQ_SPAN = 4398046511104 -- 2^42 arrival sequence numbers per priority level
local NAME_PATTERN = '^[%w_%.%-]+$'

local function keys_of(list)
  return {
    task = list[1], config = list[2], ready = list[3], scheduled = list[4], leased = list[5],
    done = list[6], failed = list[7], corrupt = list[8], seq = list[9], grouped = list[10],
    groups = list[11], groupwait = list[12],
  }
end
local K = keys_of(KEYS)

-- Raised by the validators; guard() turns it into an error reply with its code.
local function bad(message)
  error({ code = 'LEASEQ_BAD_ARGUMENT', message = message })
end

-- Runs an operation; a validation failure becomes an error reply, and an error Redis raised keeps
-- its code (WRONGTYPE, OOM, ...) instead of being wrapped as "ERR user_script:N: ...". Every script
-- validates before its first write, so an error reply means nothing was written.
local function guard(operation, body)
  local ok, result = pcall(body)
  if ok then return result end
  if type(result) == 'table' and result.code then
    return redis.error_reply(result.code .. ' ' .. operation .. ': ' .. result.message)
  end
  if type(result) == 'string' and string.find(result, '^%u[%u_]+ ') then
    return redis.error_reply(result)
  end
  error(result, 0)
end

-- Integers print exactly: %d of a double below 2^53 is the integer itself (`..` would print %.14g),
-- and costs a tenth of %.0f, which goes through glibc's multi-precision float printing.
local function fmt(n)
  return string.format('%d', n)
end

-- The text of a validated integer argument: as given when it is plain digits, else printed.
local function int_text(value, n)
  if string.find(value, '^%d+$') and #value <= 16 then return value end
  return fmt(n)
end

local function is_int(n, low, high)
  return n ~= nil and n == n and n == math.floor(n) and n >= low and n <= high
end

-- An integer within [low, high]; names the argument and echoes the value when it is not.
local function int_arg(name, value, low, high)
  local n = tonumber(value)
  if not is_int(n, low, high) then
    bad(name .. ' must be an integer from ' .. fmt(low) .. ' to ' .. fmt(high) .. ', got "' ..
      string.sub(tostring(value), 1, 40) .. '"')
  end
  return n
end

-- A time in ms (0 .. the end of 9999): the number, and its text as a record stores it.
local function time_arg(name, value)
  local n = int_arg(name, value, 0, TIME_MAX_MS)
  return n, int_text(value, n)
end

local function name_arg(name, value, max_bytes, optional)
  if type(value) ~= 'string' or (value == '' and optional) then return value end
  if #value < 1 or #value > max_bytes or not string.find(value, NAME_PATTERN) then
    bad(name .. ' must be ' .. (optional and '0' or '1') .. '-' .. max_bytes .. ' characters of A-Z a-z 0-9 _ . -')
  end
  return value
end

-- The fast checks of a batch's hot loops: no message is built unless one fails (then the caller
-- asks name_arg or time_arg for it).
local function is_name(value, max_bytes)
  return type(value) == 'string' and #value >= 1 and #value <= max_bytes and string.find(value, NAME_PATTERN) ~= nil
end

local function as_time(value)
  local n = tonumber(value)
  if n and n >= 0 and n <= TIME_MAX_MS and n % 1 == 0 then return n end
  return nil
end

-- Number of repeated groups after `first` - 1 fixed arguments, each `size` long: at least `min`
-- (default 1), at most `max`.
local function groups(first, size, max, min)
  local rest = #ARGV - first + 1
  if rest < size * (min or 1) or rest % size ~= 0 then
    bad('expected groups of ' .. size .. ' arguments from ARGV[' .. first .. '], got ' .. rest .. ' arguments')
  end
  local n = rest / size
  if n > max then bad('at most ' .. max .. ' items per call, got ' .. n) end
  return n
end

--------------------------------------------------------------------------------------------------
-- The queue's config (configure.lua writes it; every other script only reads it).

local function check_version(version)
  if version and version ~= tostring(FORMAT_VERSION) then
    error({ code = 'LEASEQ_FORMAT', message = 'the queue is stored in format v' .. string.sub(version, 1, 10) ..
      ', and these scripts read and write format v' .. FORMAT_VERSION ..
      ': run the leaseq release that matches the queue (docs/storage.md)' })
  end
end

-- For the scripts that read no setting: the format version alone (one HGET).
local function require_format()
  check_version(redis.call('HGET', K.config, 'v') or nil)
end

-- Which fields of a config table were read: `true` for all of them (read_config), else a set.
local config_known = {}

-- The whole config as a table (HGETALL: a handful of fields), the format version checked.
local function read_config()
  local flat = redis.call('HGETALL', K.config)
  local config = {}
  for i = 1, #flat, 2 do config[flat[i]] = flat[i + 1] end
  check_version(config.v)
  config_known[config] = true
  return config
end

-- Some fields only (HMGET), the format version checked.
local function read_config_fields(names)
  local fields = { 'v' }
  for i, name in ipairs(names) do fields[i + 1] = name end
  local values = redis.call('HMGET', K.config, unpack(fields))
  check_version(values[1])
  local config = { v = values[1] or nil }
  local known = { v = true }
  for i, name in ipairs(names) do
    config[name] = values[i + 1] or nil
    known[name] = true
  end
  config_known[config] = known
  return config
end

-- A config field, read (HGET) the first time it is asked for when the caller's table lacks it.
local function config_get(config, name)
  local known = config_known[config]
  if known == true then return config[name] end
  if not known then known = {}; config_known[config] = known end
  if not known[name] then
    config[name] = redis.call('HGET', K.config, name) or nil
    known[name] = true
  end
  return config[name]
end

local function config_int(config, field, default)
  local n = tonumber(config[field])
  if n == nil then return default end
  return n
end

-- The task types the queue's config declares (its p:<type> policies), sorted, for an error message.
local function declared_types()
  local names = {}
  for field in pairs(read_config()) do
    if string.sub(field, 1, 2) == 'p:' then names[#names + 1] = string.sub(field, 3) end
  end
  table.sort(names)
  local text = table.concat(names, ', ')
  if #text > 400 then text = string.sub(text, 1, 400) .. ', ...' end
  return text
end

-- A type's lease and attempts: its own policy "p:<type>" = "<leaseMs>,<maxAttempts>", else the
-- queue's default policy "d", else the library defaults.
local function policy_of(config, task_type)
  local text = config['p:' .. task_type] or config.d
  if text then
    local lease, max = string.match(text, '^(%d+),(%d+)$')
    if lease then return tonumber(lease), tonumber(max) end
  end
  return DEFAULT_LEASE_MS, DEFAULT_MAX_ATTEMPTS
end

-- The distinct lease lengths of the queue's policies, ascending (configure writes them as
-- `leases`; a queue never configured has the library's default lease only).
local function lease_lengths(config)
  local leases = {}
  for lease in string.gmatch(config.leases or '', '%d+') do leases[#leases + 1] = tonumber(lease) end
  if #leases == 0 then leases[1] = DEFAULT_LEASE_MS end
  return leases
end

--------------------------------------------------------------------------------------------------
-- Records.

local STATE_PATTERN = '^([RSLDFW])|(%d+)|(%d+)|(%d+)|(%d+)|(%l*)|(%d+)|([%w_%.%-]*)|([%w_%.%-]*)|([%w_%.%-]*)|()'
-- A LEASED state's attempts, gen, max, flags, rank and "<type>|<group>" (settle's common path).
local ACK_STATE_PATTERN = '^L|(%d+)|(%d+)|(%d+)|%d+|(%l*)|(%d+)|([%w_%.%-]*|[%w_%.%-]*)|[%w_%.%-]*|'
local BODY_PATTERN = '^1|(%d+)|([%w_%.%-]+)|([%w_%.%-]*)|()'
-- The same prefix without the payload's position: enqueued, type, group (claim's common path).
local FRESH_BODY_PATTERN = '^1|(%d+)|([%w_%.%-]+)|([%w_%.%-]*)|'
local V0_PATTERN = '^([RSLDF])|([^|]*)|(%d+)|(%d+)|(%d+)|(%d+)|(%-?%d+)|(%d+)|()'

-- A state text as a table of its fields, each the text it was stored as (attempts, gen, max, at and
-- rank are digits: tonumber where arithmetic needs them), or nil and the reason it cannot be read.
-- Never raises.
local function parse_state(text)
  local letter, attempts, gen, max, at, flags, rank, task_type, group, claim, error_at = string.match(text, STATE_PATTERN)
  if not letter then return nil, 'unreadable state record' end
  -- Digits only, so only their length can put them out of range: 16 digits for a rank (below 2^53)
  -- and a generation, 15 for a time, 4 for attempts.
  if #rank > 16 or #gen > 16 or #at > 15 or #attempts > 4 or #max > 4 then
    return nil, 'state record with a number out of range'
  end
  return {
    letter = letter, attempts = attempts, gen = gen, max = max, at = at, flags = flags, rank = rank,
    type = task_type, group = group, claim = claim, error = string.sub(text, error_at),
  }
end

local function state_text(state)
  return state.letter .. '|' .. state.attempts .. '|' .. state.gen .. '|' .. state.max .. '|' .. state.at .. '|' ..
    state.flags .. '|' .. state.rank .. '|' .. state.type .. '|' .. state.group .. '|' .. state.claim .. '|' .. state.error
end

-- A new state, for a task that had none (READY, never claimed).
local function new_state(letter, at, rank, task_type, group)
  return {
    letter = letter, attempts = '0', gen = '0', max = '0', at = at, flags = '', rank = rank, type = task_type,
    group = group, claim = '', error = '',
  }
end

local function plus(text, delta)
  return tostring(tonumber(text) + delta)
end

-- The prefix of a body: { enqueued, type, group, payload_at }, or nil and why. Never raises; reads
-- only the prefix, however long the payload.
local function parse_body(text)
  local enqueued, task_type, group, payload_at = string.match(text, BODY_PATTERN)
  if not enqueued then return nil, 'unreadable body record' end
  enqueued = tonumber(enqueued)
  if not is_int(enqueued, 0, TIME_MAX_MS) then return nil, 'body record with a time out of range' end
  return { enqueued = enqueued, type = task_type, group = group, payload_at = payload_at }
end

-- The lease token: "<rank>.<gen>", both as stored (no number is printed).
local function token_of(state)
  return state.rank .. '.' .. state.gen
end

-- Whether `token` is the state's lease token. A lease claimed under format v0 (flag "o") was handed
-- out as "<arrival seq>.<gen>": that form is honoured for it until the lease ends.
local function token_matches(state, token)
  if token == state.rank .. '.' .. state.gen then return true end
  return state.flags == 'o' and token == fmt(tonumber(state.rank) % RANK_SEQ_SPAN) .. '.' .. state.gen
end

-- A record of format v0 as a v1 state and body, or nil. The upgrade is written by the caller.
local function upgrade_v0(text)
  local letter, task_type, rank, attempts, claims, max, at, error_bytes, body_at = string.match(text, V0_PATTERN)
  if not letter or not string.find(task_type, NAME_PATTERN) or #rank > 16 or #attempts > 4 then return nil end
  local payload_at = body_at + tonumber(error_bytes)
  at = fmt(math.min(math.max(0, tonumber(at)), TIME_MAX_MS))
  local state = {
    letter = letter, attempts = attempts, gen = claims, max = max, at = at, flags = letter == 'L' and 'o' or '',
    rank = rank, type = task_type, group = '', claim = '', error = string.sub(text, body_at, payload_at - 1),
  }
  local body = nil
  if letter ~= 'D' then body = '1|' .. at .. '|' .. task_type .. '||' .. string.sub(text, payload_at) end
  return state, body
end

-- One task's record from its fields as fetched: the state text (nil: READY, never claimed, or
-- not loaded) and the body (nil when absent or not loaded). Returns { state, body, body_info,
-- upgraded, problem }. Never raises: a record it cannot read gets `problem`, for the caller to
-- quarantine.
local function read_record(state_value, body_value)
  local task = { body = body_value or nil }
  if state_value then task.state, task.problem = parse_state(state_value) end
  if not task.problem and task.body and task.body ~= '' then
    if string.byte(task.body, 1) == 49 then -- "1": format v1
      task.body_info, task.problem = parse_body(task.body)
    elseif not task.state then
      local state, body = upgrade_v0(task.body)
      if state then
        task.state, task.upgraded = state, true
        task.body = body
        if body then task.body_info = parse_body(body) end
      else
        task.problem = 'unreadable record (neither format v1 nor v0)'
      end
    end
  end
  if not task.problem and not task.state and not task.body then task.problem = 'no record' end
  if not task.problem and not task.state and not task.body_info then task.problem = 'a READY task without its body' end
  return task
end

-- Loads tasks by id: HMGET of their state fields (and bodies when `with_body`), a table by id of
-- read_record()'s. A missing state is looked up in the body once, for records of format v0.
local function load(ids, with_body)
  local tasks = {}
  if #ids == 0 then return tasks end
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    if with_body then fields[#fields + 1] = id end
  end
  local values = redis.call('HMGET', K.task, unpack(fields))
  if with_body then
    for i, id in ipairs(ids) do tasks[id] = read_record(values[2 * i - 1] or nil, values[2 * i] or nil) end
    return tasks
  end
  local missing = {}
  for i, id in ipairs(ids) do
    if not values[i] then missing[#missing + 1] = id end
  end
  local bodies = {}
  if #missing > 0 then
    local found = redis.call('HMGET', K.task, unpack(missing))
    for i, id in ipairs(missing) do bodies[id] = found[i] or nil end
  end
  for i, id in ipairs(ids) do tasks[id] = read_record(values[i] or nil, bodies[id]) end
  return tasks
end

-- The item status of a task a fenced call names, before its token is compared: 3 unknown id, 6 a
-- record that cannot be read, 1 (stale) a READY task never claimed, 2 already done; nil when its
-- state is there to check the token against.
local function presence_status(task)
  if task.problem == 'no record' then return 3 end
  if task.problem then return 6 end
  if not task.state then return 1 end
  if task.state.letter == 'D' then return 2 end
  return nil
end

--------------------------------------------------------------------------------------------------
-- Writes, collected so a batch ends with one variadic command per key. Apply adds before it
-- removes: an id is always in at least one set, whatever happens.

local function new_writes()
  return { fields = {}, drop = {}, zadd = {}, zrem = {} }
end

local function put(writes, field, value)
  local list = writes.fields
  list[#list + 1] = field
  list[#list + 1] = value
end

local function put_state(writes, id, state)
  put(writes, id .. ':s', state_text(state))
end

local function drop_field(writes, field)
  writes.drop[#writes.drop + 1] = field
end

-- Scores go printed by fmt (a Lua number would be printed by Redis with %.17g: exact for integers
-- below 2^53, but several times the cost).
local function zadd(writes, key, score, id)
  local list = writes.zadd[key]
  if not list then list = {}; writes.zadd[key] = list end
  list[#list + 1] = type(score) == 'number' and fmt(score) or score
  list[#list + 1] = id
end

local function zrem(writes, key, id)
  local list = writes.zrem[key]
  if not list then list = {}; writes.zrem[key] = list end
  list[#list + 1] = id
end

local function apply(writes)
  if #writes.fields > 0 then redis.call('HSET', K.task, unpack(writes.fields)) end
  for key, pairs_list in pairs(writes.zadd) do redis.call('ZADD', key, unpack(pairs_list)) end
  for key, ids in pairs(writes.zrem) do redis.call('ZREM', key, unpack(ids)) end
  if #writes.drop > 0 then redis.call('HDEL', K.task, unpack(writes.drop)) end
end

-- Moves an id whose record cannot be read out of `from` into the corrupt set, with the reason.
local function quarantine(writes, id, from, reason, now)
  zadd(writes, K.corrupt, now, id)
  put(writes, id .. ':x', reason)
  if from then zrem(writes, from, id) end
end

-- A v0 record met by a script that does not rewrite it otherwise: write its v1 form now.
local function write_upgrade(writes, id, task)
  if not task.upgraded then return end
  put_state(writes, id, task.state)
  if task.body then put(writes, id, task.body) else drop_field(writes, id) end
end

--------------------------------------------------------------------------------------------------
-- Steps several scripts share.

-- config nextDue when nothing is scheduled: claims skip the scheduled set entirely.
local NOTHING_DUE = TIME_MAX_MS + 1

local function set_next_due(config, due)
  local text = fmt(due)
  if config.nextDue ~= text then
    redis.call('HSET', K.config, 'nextDue', text)
    config.nextDue = text
  end
end

-- The earliest time something waiting becomes ready: the head of the scheduled set, or of
-- groupwait (a group or a type waiting for its next rate window); NOTHING_DUE when neither.
local function earliest_due()
  local due = NOTHING_DUE
  for _, key in ipairs({ K.scheduled, K.groupwait }) do
    local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if #head > 0 and tonumber(head[2]) < due then due = tonumber(head[2]) end
  end
  return due
end

-- A task became SCHEDULED at `due`: keep config nextDue the earliest due time, so a claim knows
-- without reading the scheduled set whether anything is due. `config` must carry nextDue.
local function note_due(config, due)
  local known = tonumber(config.nextDue)
  if known == nil then set_next_due(config, math.min(due, earliest_due()))
  elseif due < known then set_next_due(config, due) end
end

--------------------------------------------------------------------------------------------------
-- Groups (docs/groups.md). A task with a group belongs to the lane "<type>|<group>": the tasks of
-- one type and group. Its READY tasks are in the ready set like any other, scored by fair queuing
-- instead of arrival: a lane's next task gets the virtual time max(the head of its priority in the
-- ready set, the lane's last) + 1, so lanes take turns, one task each, and a lane with 100,000
-- waiting does not delay one with a single task. A claim that meets a task its lane may not run now
-- (the lane is at its concurrency, or its rate is used up, or older tasks of the lane wait parked)
-- parks it: state W, in the grouped set, a sorted set of score 0 whose members
-- "<lane>\0<rank>\0<id>" (rank as 16 digits) sort by lane, then rank. When the lane may run one
-- again, its first parked tasks go back to the front of the ready set, flagged "u". Every
-- common step (enqueue, claim, ack) reads and writes the lanes of a whole batch with one HMGET and
-- one HSET; only parking and unparking cost a command per task.
--   groups hash, field <lane>   "<ready>|<last>|<holders>[|<parked>|<heads>|<window>|<count>]":
--                               tasks READY (parked included), the last virtual time given, the
--                               ids (comma-separated) of the tasks that held a slot when it was last
--                               written (a lane with a concurrency only); then, when any is not 0,
--                               tasks parked, tasks let out ("u") not claimed yet, the rate
--                               window's start (ms) and its claims. A holder acked since is only
--                               dropped when the lane is next read (its ack writes no record: the
--                               claim flags "p" the leases whose settle must let parked tasks
--                               out). Absent for a lane with nothing READY or held and no window;
--                               tick sweeps the records whose holders are all gone
--   groups hash, field @<type>  the same record for a type's rate across its groups (window, count)
-- Config g:<type> (else gd): "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,
-- <typeRateMs>"; concurrency 0 and rate 0 mean no limit.

local NUL, LEX_END = string.char(0), string.char(1)
local LANE_PATTERN = '^(%d+)|(%d+)|([^|]*)|(%d+)|(%d+)|(%d+)|(%d+)$'
local SHORT_LANE_PATTERN = '^(%d+)|(%d+)|([^|]*)$'
-- A state that may hold a slot of its lane: its letter, flags and lane.
local HOLDER_PATTERN = '^([LS])|%d*|%d*|%d*|%d*|(%l*)|%d*|([^|]*|[^|]*)|'
-- The most parked tasks one step lets out of a lane.
local UNPARK_MAX = 100
local MEMBER_PATTERN = '%z(%d+)%z([%w_%.%-]+)$'
-- A READY task of a group never claimed: its flags ("" or "u"), rank, lane ("<type>|<group>") and type.
local FRESH_GROUPED_PATTERN = '^R|0|0|0|%d+|(u?)|(%d+)|(([%w_%.%-]+)|[%w_%.%-]+)||$'
-- The type and group of a state whose group is not empty.
local LANE_OF_STATE_PATTERN = '^[RSLDFW]|%d*|%d*|%d*|%d*|%l*|%d*|([%w_%.%-]+)|([%w_%.%-]+)|'
local GROUP_POLICY_PATTERN = '^(%d+),([01]),(%d+),(%d+),(%d+),(%d+)$'
local NO_GROUP_POLICY = { conc = 0, ordered = false, rate_max = 0, rate_ms = 0, type_max = 0, type_ms = 0 }

-- The lanes this script read (name -> record, false while being read), those it changed (in
-- order), those whose holders it checked, and the head of each priority in the ready set.
local group_policies, lanes, lanes_dirty, lanes_checked, fronts, count_texts = {}, {}, {}, {}, {}, {}

-- A type's group policy: g:<type>, else the queue's gd, else none (lanes only take turns).
local function group_policy(config, task_type)
  local known = group_policies[task_type]
  if known then return known end
  local text = config_get(config, 'g:' .. task_type) or config_get(config, 'gd')
  known = NO_GROUP_POLICY
  if text then
    local conc, ordered, rate_max, rate_ms, type_max, type_ms = string.match(text, GROUP_POLICY_PATTERN)
    if conc then
      known = {
        conc = tonumber(conc), ordered = ordered == '1', rate_max = tonumber(rate_max), rate_ms = tonumber(rate_ms),
        type_max = tonumber(type_max), type_ms = tonumber(type_ms),
      }
    end
  end
  group_policies[task_type] = known
  return known
end

-- A lane's name: "<type>|<group>", the very text a state holds (so an ack reads it with no copy).
local function lane_of(task_type, group)
  return task_type .. '|' .. group
end

local function lane_type(lane)
  return string.match(lane, '^([^|]+)|')
end

local function lane_member(lane, rank, id)
  return lane .. NUL .. string.rep('0', 16 - #rank) .. rank .. NUL .. id
end

-- A count as text (0 for a negative one), printed once per value per script: a batch's lanes
-- mostly share a few small counts, and printing a number costs more than the rest of a record.
local function count_text(n)
  if n < 0 then n = 0 end
  local text = count_texts[n]
  if not text then
    text = fmt(n)
    count_texts[n] = text
  end
  return text
end

-- Loads the records of the lanes (or @<type>s) named that this script has not read yet: one HMGET.
-- A record is a table of exactly its eight fields, so it is built once, without a rehash (a claim
-- reads one per task of a group); its holders stay the record's text ("" or ids joined by ","), and
-- its last virtual time the text it was read as until enqueue gives a new one (fair_turn), so a
-- claim neither parses nor prints it.
local function lanes_load(names)
  local missing = {}
  for _, name in ipairs(names) do
    if lanes[name] == nil then
      lanes[name] = false -- asked for: read below
      missing[#missing + 1] = name
    end
  end
  if #missing == 0 then return end
  local values = redis.call('HMGET', K.groups, unpack(missing))
  for i, name in ipairs(missing) do
    local text, record = values[i], nil
    if text then
      local ready, last, held = string.match(text, SHORT_LANE_PATTERN)
      if ready then
        record = { ready = tonumber(ready), last = last, held = held, parked = 0, heads = 0, window = 0, count = 0, dirty = false }
      else
        local parked, heads, window, count
        ready, last, held, parked, heads, window, count = string.match(text, LANE_PATTERN)
        if ready then
          record = {
            ready = tonumber(ready), last = last, held = held, parked = tonumber(parked),
            heads = tonumber(heads), window = tonumber(window), count = tonumber(count), dirty = false,
          }
        end
      end
    end
    lanes[name] = record or { ready = 0, last = '0', held = '', parked = 0, heads = 0, window = 0, count = 0, dirty = false }
  end
end

-- How many tasks a lane's record names as holding its slots.
local function holder_count(record)
  local held = record.held
  if held == '' then return 0 end
  local n, at = 1, string.find(held, ',', 1, true)
  while at do
    n = n + 1
    at = string.find(held, ',', at + 1, true)
  end
  return n
end

-- The ids a lane's record names as holding its slots, as a list (the uncommon paths).
local function holder_ids(record)
  local list = {}
  for id in string.gmatch(record.held, '[^,]+') do list[#list + 1] = id end
  return list
end

local function lane_get(name)
  if lanes[name] == nil then lanes_load({ name }) end
  return lanes[name]
end

local function lane_touch(name, record)
  if not record.dirty then
    record.dirty = true
    lanes_dirty[#lanes_dirty + 1] = name
  end
end

-- A task holds one of a lane's slots.
local function lane_add_holder(name, record, id)
  record.held = record.held == '' and id or record.held .. ',' .. id
  lane_touch(name, record)
end

-- Whether a state text is a task holding a slot of `lane`: leased, or an ordered group's retry
-- waiting for its time (S, flag "h").
local function holds(text, lane)
  if not text then return false end
  local letter, flags, task_lane = string.match(text, HOLDER_PATTERN)
  if not letter or task_lane ~= lane then return false end
  return letter == 'L' or string.find(flags, 'h', 1, true) ~= nil
end

local NO_TEXTS = {}

-- Drops the holders that no longer hold a slot (acked, or gone) from the loaded lanes `names`,
-- reading their states with one HMGET. Returns the state texts of those still holding, by id.
-- The common lane, one holder acked since, costs one field of the HMGET and no table.
local function lanes_verify(names)
  local fields, ids, owners = {}, {}, {}
  for _, name in ipairs(names) do
    local r = lanes[name]
    if r and not lanes_checked[name] then
      lanes_checked[name] = true -- once: holders this script adds are not written yet
    elseif r then
      r = nil
    end
    if r and r.held ~= '' then
      if string.find(r.held, ',', 1, true) then
        for id in string.gmatch(r.held, '[^,]+') do
          ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = id, name, id .. ':s'
        end
      else
        ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = r.held, name, r.held .. ':s'
      end
      r.held = '' -- rebuilt below from the holders still holding
    end
  end
  if #ids == 0 then return NO_TEXTS end
  local values = redis.call('HMGET', K.task, unpack(fields))
  local texts = NO_TEXTS
  for i, id in ipairs(ids) do
    local name, value = owners[i], values[i]
    local first = value and string.byte(value, 1)
    local r = lanes[name]
    if (first == 76 or first == 83) and holds(value, name) then -- "L", "S": the others hold nothing
      r.held = r.held == '' and id or r.held .. ',' .. id
      if texts == NO_TEXTS then texts = {} end
      texts[id] = value
    else
      lane_touch(name, r)
    end
  end
  return texts
end

-- Takes `id` out of a lane's holders (its slot is free).
local function lane_drop_holder(name, record, id)
  local held = record.held
  if held == id then
    record.held = ''
  elseif string.find(held, ',', 1, true) then
    local kept = {}
    for holder in string.gmatch(held, '[^,]+') do
      if holder ~= id then kept[#kept + 1] = holder end
    end
    record.held = table.concat(kept, ',')
  end
  lane_touch(name, record)
end

-- Writes the lane records this script changed: one HSET and at most one HDEL. `now` 0: unknown
-- (a rate window is then kept).
local function lanes_flush(now)
  local fields, gone = {}, {}
  for _, name in ipairs(lanes_dirty) do
    local r = lanes[name]
    r.dirty = false
    local held = r.held
    if held == '' and r.ready <= 0 and (r.count == 0 or (r.span and r.window + r.span <= now)) then
      gone[#gone + 1] = name
    else
      fields[#fields + 1] = name
      -- `last` is text, or a virtual time below 2^42 that `..` prints exactly (%.14g).
      local head = count_text(r.ready) .. '|' .. r.last .. '|' .. held
      if r.parked > 0 or r.heads > 0 or r.count > 0 then
        fields[#fields + 1] = head .. '|' .. count_text(r.parked) .. '|' .. count_text(r.heads) .. '|' .. fmt(r.window) .. '|' ..
          count_text(r.count)
      else
        fields[#fields + 1] = head
      end
    end
  end
  lanes_dirty = {}
  if #fields > 0 then redis.call('HSET', K.groups, unpack(fields)) end
  if #gone > 0 then redis.call('HDEL', K.groups, unpack(gone)) end
end

-- Whether a rate of `max` claims per `span` ms lets one more claim happen now; else when it will.
local function rate_open(record, max, span, now)
  if max == 0 then return true end
  record.span = span
  local window = now - now % span
  if record.window ~= window or record.count < max then return true end
  return false, window + span
end

-- Counts one claim in a rate window.
local function rate_count(name, record, max, span, now)
  if max == 0 then return end
  local window = now - now % span
  if record.window ~= window then record.window, record.count = window, 0 end
  record.count, record.span = record.count + 1, span
  lane_touch(name, record)
end

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

-- The ready-set score right behind the head of a rank's priority (its own arrival when none of that
-- priority is READY): where tasks let out or returned go.
local function behind_front(rank)
  local band = band_of(rank)
  local front = front_of(band)
  return band * RANK_SEQ_SPAN + (front and front + 1 or tonumber(rank) - band * RANK_SEQ_SPAN)
end

-- A new task's turn in its lane: right behind the head of its priority (a lane's first task runs in
-- the next round), and after its lane's last, which it becomes. With none of its priority READY,
-- this batch's first arrival of it (`seq`, its arrival) stands for the head, so the lanes of one
-- batch start level too.
local function fair_turn(record, band, seq)
  local front = front_of(band)
  if not front then
    front = seq - 1
    fronts[band] = front
  end
  local last = tonumber(record.last)
  local turn = front > last and front + 1 or last + 1
  record.last = turn
  return turn
end

-- A lane or a type (`@<type>`) waits in groupwait for its rate window to open at `opens_at`; config
-- nextDue counts it, so a claim (and a wake-up) comes then.
local function lane_wait(name, opens_at, config)
  redis.call('ZADD', K.groupwait, opens_at, name)
  config_get(config, 'nextDue')
  note_due(config, opens_at)
end

-- Parks a READY task of a lane: state W, in the grouped set (the caller takes it out of ready).
local function lane_park(writes, lane, record, id, state)
  if string.find(state.flags, 'u', 1, true) then
    state.flags = string.gsub(state.flags, 'u', '')
    record.heads = record.heads - 1
  end
  state.letter = 'W'
  put_state(writes, id, state)
  zadd(writes, K.grouped, 0, lane_member(lane, state.rank, id))
  record.parked = record.parked + 1
  lane_touch(lane, record)
end

-- How many more tasks a lane may run now besides those let out already (its concurrency, its rate
-- window), and when its window opens if the rate is what stops it.
local function lane_room(lane, record, config, now)
  local policy = group_policy(config, lane_type(lane))
  local room = UNPARK_MAX
  if policy.conc > 0 then
    lanes_verify({ lane })
    room = math.min(room, policy.conc - holder_count(record) - record.heads)
  end
  if policy.rate_max > 0 then
    local open, opens_at = rate_open(record, policy.rate_max, policy.rate_ms, now)
    local window = now - now % policy.rate_ms
    local used = record.window == window and record.count or 0
    room = math.min(room, policy.rate_max - used - record.heads)
    if not open then return 0, opens_at end
  end
  return room, nil
end

-- A lane with parked tasks lets out as many as it may run now, first by rank: back into the ready
-- set right behind the head of their priority (so tasks let out take turns, first out first),
-- flagged "u" (immediate writes). A lane its rate stops waits in groupwait for the next window.
local function lane_unpark(lane, config, now)
  local record = lane_get(lane)
  if record.parked <= 0 then return end
  local room, opens_at = lane_room(lane, record, config, now)
  if opens_at then lane_wait(lane, opens_at, config) end
  if room <= 0 then return end
  local members = redis.call('ZRANGE', K.grouped, '[' .. lane .. NUL, '[' .. lane .. LEX_END, 'BYLEX', 'LIMIT', 0, math.min(room, record.parked))
  if #members == 0 then record.parked = 0; lane_touch(lane, record); return end
  local ids = {}
  for i, member in ipairs(members) do ids[i] = select(2, string.match(member, MEMBER_PATTERN)) or '' end
  local fields = {}
  for i, id in ipairs(ids) do fields[i] = id .. ':s' end
  local values = redis.call('HMGET', K.task, unpack(fields))
  local states, scores = {}, {}
  for i, id in ipairs(ids) do
    local state = values[i] and parse_state(values[i])
    record.parked = record.parked - 1
    if state and state.letter == 'W' then
      state.letter, state.flags = 'R', state.flags .. 'u'
      states[#states + 1] = id .. ':s'
      states[#states + 1] = state_text(state)
      scores[#scores + 1] = behind_front(state.rank)
      scores[#scores + 1] = id
      record.heads = record.heads + 1
    end
  end
  lane_touch(lane, record)
  if #states > 0 then
    redis.call('HSET', K.task, unpack(states))
    redis.call('ZADD', K.ready, unpack(scores))
  end
  redis.call('ZREM', K.grouped, unpack(members))
end

-- A task of a lane becomes READY (enqueue, a due scheduled task, requeue, repair): into the ready
-- set at its lane's next virtual time, or parked when the lane has parked tasks (it waits its turn
-- behind them, by rank). An ordered lane keeps all its READY tasks parked but one, its head, so
-- they run in rank order whenever they became READY: this one is parked (written at once), and
-- the lane given a head if it has none and nothing leased. Other writes go to `writes`; the caller
-- takes the task out of the set it was in.
local function lane_add(writes, id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready + 1
  lane_touch(lane, record)
  if group_policy(config, state.type).ordered then
    state.letter = 'W'
    redis.call('HSET', K.task, id .. ':s', state_text(state))
    redis.call('ZADD', K.grouped, 0, lane_member(lane, state.rank, id))
    record.parked = record.parked + 1
    lanes_verify({ lane })
    if record.heads <= 0 and record.held == '' then lane_unpark(lane, config, now) end
    return
  end
  if record.parked > 0 then return lane_park(writes, lane, record, id, state) end
  local band = band_of(state.rank)
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, band * RANK_SEQ_SPAN + fair_turn(record, band, tonumber(state.rank) - band * RANK_SEQ_SPAN), id)
end

-- A leased (or held) task of a lane is READY again (a retry due now, a release, a reclaim): its
-- slot is free, and it goes right behind the head of its priority, before the rest of its lane;
-- when the lane has parked tasks, or is ordered (it is the lane's head again), it is let out ahead
-- of them ("u").
local function lane_return(writes, id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  lane_drop_holder(lane, record, id)
  record.ready = record.ready + 1
  if record.parked > 0 or group_policy(config, state.type).ordered then
    state.flags = state.flags .. 'u'
    record.heads = record.heads + 1
  end
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, behind_front(state.rank), id)
end

-- A task of a lane stopped holding one of its slots (done, failed, retried later, cancelled):
-- the lane may run its next parked task.
local function lane_release(lane, id, config, now)
  local record = lane_get(lane)
  lane_drop_holder(lane, record, id)
  if record.parked > 0 then lane_unpark(lane, config, now) end
end

-- A READY task of a lane leaves it for good (cancel, delete), once it is out of its set: a task
-- let out gives its place to the next parked one.
local function lane_remove(id, state, config, now)
  local lane = lane_of(state.type, state.group)
  local record = lane_get(lane)
  record.ready = record.ready - 1
  if state.letter == 'W' then record.parked = record.parked - 1 end
  if string.find(state.flags, 'u', 1, true) then record.heads = record.heads - 1 end
  lane_touch(lane, record)
  if record.parked > 0 then lane_unpark(lane, config, now) end
end

-- A task is READY again: an ungrouped one in the ready set by its rank; one of a group back into its
-- lane, first (`returning`: it held a slot, as a retry due now, a release or a reclaim) or at its
-- turn (lane_add: a due scheduled task, a requeue, a repair). The caller takes it out of its set.
local function make_ready(writes, id, state, config, now, returning)
  if state.group == '' then
    state.letter = 'R'
    zadd(writes, K.ready, state.rank, id)
    put_state(writes, id, state)
  elseif returning then
    lane_return(writes, id, state, config, now)
  else
    lane_add(writes, id, state, config, now)
  end
end

-- For a script that has no `now` (delete): the next claim looks at the lane (due at once in
-- groupwait) and unparks what it may run.
local function lane_later(lane, config)
  lane_wait(lane, 0, config)
end

-- One step of tick's sweep of the groups hash (cursor in config gsweep): the records of lanes with
-- nothing READY whose holders were all acked since (their acks write no record), and rate windows
-- that closed, are deleted by lanes_flush.
local function lanes_sweep(config, now)
  local cursor = config_get(config, 'gsweep') or '0'
  local page = redis.call('HSCAN', K.groups, cursor, 'COUNT', 100)
  if page[1] ~= cursor then redis.call('HSET', K.config, 'gsweep', page[1]) end
  local names = {}
  for i = 1, #page[2], 2 do names[#names + 1] = page[2][i] end
  if #names == 0 then return end
  lanes_load(names)
  lanes_verify(names)
  for _, name in ipairs(names) do
    local record = lanes[name]
    if record and record.ready <= 0 and record.held == '' then
      local rated = string.byte(name, 1) == 64 and string.sub(name, 2) or lane_type(name)
      local policy = rated and group_policy(config, rated) or NO_GROUP_POLICY
      record.span = string.byte(name, 1) == 64 and policy.type_ms or policy.rate_ms
      lane_touch(name, record)
    end
  end
end

-- Lanes and types whose rate window opened: lanes run their parked tasks again.
local function open_windows(config, now)
  local due = redis.call('ZRANGEBYSCORE', K.groupwait, '-inf', fmt(now), 'LIMIT', 0, MAINTENANCE_MAX)
  if #due == 0 then return end
  redis.call('ZREM', K.groupwait, unpack(due))
  for _, name in ipairs(due) do
    if string.byte(name, 1) ~= 64 then lane_unpark(name, config, now) end -- "@": a type's window
  end
end

-- Moves up to `limit` due SCHEDULED tasks to READY with the rank they were given at enqueue (a
-- task of a group into its lane), opens the rate windows that are due, and keeps config nextDue
-- exact. Costs nothing while nothing is due. The caller runs lanes_flush().
local function promote_due(config, now, now_text, limit)
  local next_due = tonumber(config.nextDue)
  if next_due ~= nil and next_due > now then return 0 end
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', fmt(now), 'LIMIT', 0, limit)
  if #due > 0 then
    local tasks = load(due, false)
    local writes = new_writes()
    for _, id in ipairs(due) do
      local task = tasks[id]
      if task.problem or not task.state then
        quarantine(writes, id, K.scheduled, task.problem or 'a SCHEDULED task without its state', now)
      else
        local state = task.state
        state.letter, state.at = 'R', now_text
        if task.upgraded and task.body then put(writes, id, task.body) end
        -- A held retry of an ordered group gives back its slot as it goes first in its group.
        local held = state.flags == 'h'
        state.flags = ''
        make_ready(writes, id, state, config, now, held)
        zrem(writes, K.scheduled, id)
      end
    end
    apply(writes)
  end
  open_windows(config, now)
  set_next_due(config, earliest_due())
  return #due
end

--------------------------------------------------------------------------------------------------
-- Wake-ups (docs/wake-ups.md). On AWS a worker runs only when something invokes it, so whoever
-- makes work fall due arranges for a worker to look then. Config `wake` is the earliest time one is
-- arranged for: a wake-up message due then, or, when in the past, the last claim of a worker still
-- draining, which arranges the next wake-up itself when it stops (rest.lua).

-- Whether a worker will look at the queue by `due`: a wake-up arranged for no later, or a worker
-- that claimed within WAKE_ACTIVE_MS.
local function wake_covers(config, now, due)
  local wake = tonumber(config.wake)
  return wake ~= nil and wake <= due and wake >= now - WAKE_ACTIVE_MS
end

-- Work falls due at `due` (ms; before now means now). Returns the time the caller must send a
-- wake-up for, and records it in config `wake`; nil when one is arranged already, or when `due` is
-- more than `horizon` ms away (a reclaimer run closer to it arranges that one).
local function need_wake(config, now, due, horizon)
  if due < now then due = now end
  if due > now + horizon or wake_covers(config, now, due) then return nil end
  local text = fmt(due)
  redis.call('HSET', K.config, 'wake', text)
  config.wake = text
  return due
end

-- A claim: a worker is draining now. Written at most every WAKE_ACTIVE_MS / 2, so a busy queue pays
-- one HSET every few seconds, not one per claim.
local function mark_active(config, now)
  local wake = tonumber(config.wake)
  if wake == nil or wake > now or wake < now - WAKE_ACTIVE_MS / 2 then
    local text = fmt(now)
    redis.call('HSET', K.config, 'wake', text)
    config.wake = text
  end
end

-- When scheduled work next falls due, or an ordered queue's hold ends; nil when neither.
-- `config` carries nextDue, ordered and hold.
local function next_due_of(config, now)
  local due = tonumber(config.nextDue)
  if due == nil then due = earliest_due() end
  if due >= NOTHING_DUE then due = nil end
  local hold = tonumber(config.hold)
  if config.ordered == '1' and hold and hold > now and (due == nil or hold < due) then due = hold end
  return due
end

-- Returns up to `limit` leases that expired before now - skew: to READY with their rank (marked
-- solo: it may have crashed its worker, so the next claim hands it out alone), or to FAILED ("lease
-- expired") when their attempts are used up. Atomic, so concurrent reclaimers each see only what
-- the others left. Returns { id, letter, ... }. The caller runs lanes_flush().
local function reclaim_expired(config, now, now_text, skew, limit)
  local expired = redis.call('ZRANGEBYSCORE', K.leased, '-inf', '(' .. fmt(now - skew), 'LIMIT', 0, limit)
  local result = {}
  if #expired == 0 then return result end
  local tasks = load(expired, false)
  local writes = new_writes()
  for _, id in ipairs(expired) do
    local task = tasks[id]
    if task.problem or not task.state then
      quarantine(writes, id, K.leased, task.problem or 'a LEASED task without its state', now)
    else
      local state = task.state
      state.gen = plus(state.gen, 1) -- revokes the token: a late settle of this lease is stale
      state.claim = ''
      state.at = now_text
      if tonumber(state.attempts) >= tonumber(state.max) then
        state.letter, state.flags = 'F', ''
        state.error = 'lease expired after attempt ' .. state.attempts .. ' of ' .. state.max
        zadd(writes, K.failed, now_text, id)
        put_state(writes, id, state)
        if state.group ~= '' then lane_release(lane_of(state.type, state.group), id, config, now) end
      else
        state.flags = 's'
        make_ready(writes, id, state, config, now, true)
      end
      if task.upgraded and task.body then put(writes, id, task.body) end
      zrem(writes, K.leased, id)
      result[#result + 1] = id
      result[#result + 1] = state.letter == 'W' and 'R' or state.letter
    end
  end
  apply(writes)
  return result
end

-- Deletes up to `limit` members of a DONE or FAILED set finished before `cutoff`, with their records.
local function trim_before(set_key, cutoff, limit)
  local old = redis.call('ZRANGEBYSCORE', set_key, '-inf', '(' .. fmt(cutoff), 'LIMIT', 0, limit)
  if #old == 0 then return 0 end
  local fields = {}
  for _, id in ipairs(old) do
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':s'
  end
  redis.call('HDEL', K.task, unpack(fields))
  redis.call('ZREM', set_key, unpack(old))
  return #old
end

-- { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled,
-- corrupt }. `counts` may carry counts the caller already knows, to save their ZCARD.
local function queue_stats(now, counts, config)
  counts = counts or {}
  for _, name in ipairs({ 'ready', 'scheduled', 'leased', 'done', 'failed', 'corrupt' }) do
    if counts[name] == nil then counts[name] = redis.call('ZCARD', K[name]) end
  end
  local heads = counts.ready
  counts.ready = heads + redis.call('ZCARD', K.grouped) -- READY behind their group's head count too
  local oldest_ready_age, most_overdue, due_scheduled = 0, 0, 0
  if heads > 0 then
    local head = redis.call('ZRANGE', K.ready, 0, 0)[1]
    local values = redis.call('HMGET', K.task, head .. ':s', head)
    local since = nil
    if values[1] then
      local state = parse_state(values[1])
      if state then since = tonumber(state.at) end
    elseif values[2] then
      local info = parse_body(values[2])
      if info then since = info.enqueued end
    end
    if since then oldest_ready_age = math.max(0, now - since) end
  end
  if counts.leased > 0 then
    local earliest = tonumber(redis.call('ZRANGE', K.leased, 0, 0, 'WITHSCORES')[2])
    most_overdue = math.max(0, now - earliest)
  end
  if counts.scheduled > 0 then
    due_scheduled = redis.call('ZCOUNT', K.scheduled, '-inf', fmt(now))
  end
  return {
    counts.ready, counts.scheduled, counts.leased, counts.done, counts.failed,
    oldest_ready_age, most_overdue, due_scheduled, counts.corrupt,
    config.paused == '1' and 1 or 0, config.pauses or '',
  }
end
