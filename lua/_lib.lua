-- _lib.lua: helpers shared by every leaseq script. bin/generate-lua.ts prepends the constants of
-- shared/config.ts (FORMAT_VERSION, ID_MAX_BYTES, TIME_MAX_MS, ...) and this file to each operation
-- script, so each EVAL body is self-contained and every bound is the one TypeScript checks.
--
-- Storage format v2 (docs/storage.md). Every key of the queue comes in KEYS, in the order of
-- shared/keys.ts: task, config, ready, scheduled, leased, done, failed, corrupt, seq, grouped,
-- groups, groupwait.
--   task hash, field <id>     the body, written once at enqueue and dropped at ack:
--                             "1|<enqueuedAtMs>|<type>|<group>|<payload>"
--   task hash, field <id>:s   the state, small, rewritten at every move (absent while a task is
--                             READY and was never claimed):
--                             "<L>|<attempts>|<gen>|<maxAttempts>|<atMs>|<flags>|<rank>|<type>|<group>|<claim>|<error>"
--     L            R ready, S scheduled, L leased, D done, F failed; W ready but parked in the
--                  grouped set (behind its group's head, or set aside while its type may not run)
--     attempts     claims that counted (a release gives one back)
--     gen          the lease generation: a claim sets it to the queue's lease counter, a reclaim,
--                  release or cancel adds one; the token is "<rank>.<gen>", unique per lease
--     maxAttempts  the type's policy, recorded at claim (0 before the first claim)
--     atMs         R ready since, S due at, L lease deadline, D/F finished at
--     flags        "s": returned by a reclaim, so the next claim hands it out alone; "o": a lease
--                  claimed under format v0, whose holder has a token of the old form; "h": a
--                  retry of an ordered group, SCHEDULED, that keeps its group's slot meanwhile;
--                  "u": READY, let out of its group's parked tasks to run next; "p": a lease whose
--                  settle lets its group's parked tasks out; "t": parked while its type may not run
--     rank         (priority + 1000) * 2^42 + arrival sequence: an exact integer below 2^53
--     claim        the claim id that leased it (L only): a repeated claim returns the same batch
--   task hash, field <id>:x   why the task was quarantined (ids in the corrupt set only)
--   task hash, field #lease   the queue's lease counter (ids never start with "#")
--   task hash, field #v0      and the scheduled set's member #v0 at score 0: the guard that stops a
--                             worker of format v0 before it pops anything (upgrade_format)
--   config hash              v (format version), the queue's settings (configure.lua), nextDue, hold, wake
--   grouped, groups, groupwait  groups and types set aside (see "Groups" below, and docs/groups.md)
-- A record written by format v0 ("R|type|rank|attempts|claims|max|atMs|errorBytes|error+payload" in
-- field <id>) is read and rewritten as v2 by whichever script meets it first; one of format v1 is
-- read as it is (docs/storage.md "From format v1").
--
-- Two rules every script keeps (test/shared/lua-bounds.test.ts, test/lua/faults.test.ts):
--   - No variadic command takes more than VARIADIC_MAX values: they all go through read_many and
--     write_many, which send longer lists in slices (Redis's Lua refuses to unpack about 8,000).
--   - No error after the first write: a script reads and checks what it needs before it writes,
--     and what runs after a write cannot raise (parsers return nil, never error). Each script's
--     header says how it keeps this rule.
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

-- Fields of the task hash that are not a task's (ids never start with "#").
local LEASE_COUNTER = '#lease'
local V0_GUARD = '#v0'
local V0_GUARD_TEXT = 'format v2: a worker of leaseq 0.1.0 (format v0) must not run on this queue (docs/storage.md)'
-- The scheduled set from just above score 0, where the v0 guard waits: real due times are >= 1.
local SCHEDULED_FROM = '(0'
-- The format this release writes, as the config keeps it.
local FORMAT_TEXT = tostring(FORMAT_VERSION)

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

-- How many items of `size` arguments each follow the first `first` - 1 fixed ones: at least `min`
-- (default 1), at most `max`.
local function item_count(first, size, max, min)
  local rest = #ARGV - first + 1
  if rest < size * (min or 1) or rest % size ~= 0 then
    bad('expected groups of ' .. size .. ' arguments from ARGV[' .. first .. '], got ' .. rest .. ' arguments')
  end
  local n = rest / size
  if n > max then bad('at most ' .. max .. ' items per call, got ' .. n) end
  return n
end

--------------------------------------------------------------------------------------------------
-- Variadic commands. Redis's Lua refuses to unpack about 8,000 values (its C stack), so every
-- variadic command of the scripts goes through these two, which send a longer list in slices of at
-- most VARIADIC_MAX values (a whole number of `stride`s: 2 for field-value pairs). They hold the
-- only unpacks in lua/ (test/shared/lua-bounds.test.ts).

-- A reading command (HMGET, ZMSCORE) of `names`: its replies, in order, as one list.
local function read_many(command, key, names)
  local n = #names
  if n == 0 then return {} end
  if n <= VARIADIC_MAX then return redis.call(command, key, unpack(names, 1, n)) end
  local replies = {}
  for first = 1, n, VARIADIC_MAX do
    local reply = redis.call(command, key, unpack(names, first, math.min(n, first + VARIADIC_MAX - 1)))
    for i = 1, #reply do replies[#replies + 1] = reply[i] end
  end
  return replies
end

-- A writing command (HSET, HDEL, ZADD, ZREM, UNLINK) of `values`; nothing when there are none.
-- Returns the sum of its replies (what HDEL, ZREM and UNLINK count).
local function write_many(command, key, values, stride)
  local n = #values
  if n == 0 then return 0 end
  local size = VARIADIC_MAX - VARIADIC_MAX % (stride or 1)
  local total = 0
  for first = 1, n, size do
    total = total + redis.call(command, key, unpack(values, first, math.min(n, first + size - 1)))
  end
  return total
end

--------------------------------------------------------------------------------------------------
-- The queue's config (configure.lua writes the settings; the scripts keep nextDue, hold, wake).

-- This release reads formats v0 (records only), v1 and v2, and writes v2.
local function check_version(version)
  if version and version ~= FORMAT_TEXT and version ~= '1' then
    error({ code = 'LEASEQ_FORMAT', message = 'the queue is stored in format v' .. string.sub(version, 1, 10) ..
      ', and these scripts read formats v0 to v' .. FORMAT_VERSION .. ' and write v' .. FORMAT_VERSION ..
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
  local values = read_many('HMGET', K.config, fields)
  check_version(values[1] or nil)
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

-- The task types the queue's config declares (its p:<type> policies and a:<type> accepted types),
-- sorted, for an error message.
local function declared_types()
  local names = {}
  for field in pairs(read_config()) do
    local prefix = string.sub(field, 1, 2)
    if prefix == 'p:' or prefix == 'a:' then names[#names + 1] = string.sub(field, 3) end
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

-- The time of config `wake` (a mark may carry "|<call id>" after it: whose it is), or nil.
local function wake_time(config)
  local wake = config.wake
  if not wake then return nil end
  return tonumber(string.match(wake, '^%d+'))
end

-- The config `hold` of an ordered queue: its time, and the id of the task it waits for (a hold of
-- format v1 names none).
local function hold_of(config)
  local hold = config.hold
  if not hold then return nil end
  local at, id = string.match(hold, '^(%d+)|?(.*)$')
  return tonumber(at), id ~= '' and id or nil
end
--------------------------------------------------------------------------------------------------
-- Records.

-- A body of format 1 starts with "1" (byte 49; a record of format v0 with its state letter).
local BODY_FORMAT_BYTE = 49
-- The mark of a quarantined record's state, before the text it had (see quarantine).
local QUARANTINED = 'C|'
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

-- A quarantined record's state as it was before it was set aside (the text itself otherwise).
local function unmarked(text)
  if string.sub(text, 1, 2) == QUARANTINED then return string.sub(text, 3) end
  return text
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

-- The lease token: "<rank>.<gen>", both as stored (no number is printed). The generation of every
-- lease is the queue's lease counter at its claim, so no two leases share a token, even across a
-- delete and a new enqueue of the same id.
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
  if state_value and string.sub(state_value, 1, 2) == QUARANTINED then
    task.problem = 'quarantined'
    return task
  end
  if state_value then task.state, task.problem = parse_state(state_value) end
  if not task.problem and task.body and task.body ~= '' then
    if string.byte(task.body, 1) == BODY_FORMAT_BYTE then
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

-- The fields of each of `ids` in the task hash, in this order: its state, with `body` its body, with
-- `reason` its quarantine reason; and their values (one HMGET, sliced), the same number per id.
local function record_fields(ids, body, reason)
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    if body then fields[#fields + 1] = id end
    if reason then fields[#fields + 1] = id .. ':x' end
  end
  return read_many('HMGET', K.task, fields), fields
end

-- Loads tasks by id: HMGET of their state fields (and bodies when `with_body`), a table by id of
-- read_record()'s. A missing state is looked up in the body once, for records of format v0.
local function load(ids, with_body)
  local tasks = {}
  if #ids == 0 then return tasks end
  local values = record_fields(ids, with_body, false)
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
    local found = read_many('HMGET', K.task, missing)
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
  return { fields = {}, drop = {}, adds = {}, removes = {} }
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
  local list = writes.adds[key]
  if not list then list = {}; writes.adds[key] = list end
  list[#list + 1] = type(score) == 'number' and fmt(score) or score
  list[#list + 1] = id
end

local function zrem(writes, key, id)
  local list = writes.removes[key]
  if not list then list = {}; writes.removes[key] = list end
  list[#list + 1] = id
end

local function apply(writes)
  write_many('HSET', K.task, writes.fields, 2)
  for key, pairs_list in pairs(writes.adds) do write_many('ZADD', key, pairs_list, 2) end
  for key, ids in pairs(writes.removes) do write_many('ZREM', key, ids) end
  write_many('HDEL', K.task, writes.drop)
end

-- The sets a task's id may be in besides grouped (whose members carry its group and rank too).
local TASK_SETS = { K.ready, K.scheduled, K.leased, K.done, K.failed }

-- Sets aside an id whose record cannot be read: into the corrupt set with the reason, and out of
-- every set it may be in, whichever its unreadable record named; `member`, when known, is its
-- member in grouped. A parked task's member not known here is dropped by the next look at its
-- group (lane_unpark), or by check. Its state is marked (QUARANTINED before the text it had, kept
-- to read), so every script, reading the state alone, knows it as quarantined: a worker holding
-- its token cannot settle it, a cancel cannot bring it back into a set. A record already marked
-- keeps its reason and the time it was set aside.
local function quarantine(writes, id, reason, now, member)
  local old = redis.call('HGET', K.task, id .. ':s')
  if old and string.sub(old, 1, 2) == QUARANTINED then
    if redis.call('HEXISTS', K.task, id .. ':x') == 0 then put(writes, id .. ':x', reason) end
    if not redis.call('ZSCORE', K.corrupt, id) then zadd(writes, K.corrupt, now, id) end
  else
    zadd(writes, K.corrupt, now, id)
    put(writes, id .. ':x', reason)
    put(writes, id .. ':s', QUARANTINED .. (old or ''))
  end
  for _, key in ipairs(TASK_SETS) do zrem(writes, key, id) end
  if member then zrem(writes, K.grouped, member) end
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

-- The earliest time something waiting becomes ready: the head of the scheduled set (the v0 guard
-- at score 0 aside), or of groupwait (a group or a type waiting to run again); NOTHING_DUE when
-- neither.
local function earliest_due()
  local due = NOTHING_DUE
  local head = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #head > 0 then due = tonumber(head[2]) end
  head = redis.call('ZRANGE', K.groupwait, 0, 0, 'WITHSCORES')
  if #head > 0 and tonumber(head[2]) < due then due = tonumber(head[2]) end
  return due
end

-- A task became SCHEDULED at `due`: keep config nextDue the earliest due time, so a claim knows
-- without reading the scheduled set whether anything is due. `config` must carry nextDue.
local function note_due(config, due)
  local known = tonumber(config.nextDue)
  if known == nil then set_next_due(config, math.min(due, earliest_due()))
  elseif due < known then set_next_due(config, due) end
end

-- SCHEDULED tasks: the scheduled set without the v0 guard.
local function scheduled_count()
  return redis.call('ZCOUNT', K.scheduled, SCHEDULED_FROM, '+inf')
end
--------------------------------------------------------------------------------------------------
-- Groups (docs/groups.md). A task with a group belongs to the lane "<type>|<group>": the tasks of
-- one type and group. Its READY tasks are in the ready set like any other, scored by fair queuing
-- instead of arrival: a lane's next task gets the virtual time max(the head of its priority in the
-- ready set, the lane's last at that priority) + 1, so lanes take turns, one task each, and a lane
-- with 100,000 waiting does not delay one with a single task. Once a queue has a task with a group
-- (config fair = 1), its tasks without one take turns the same way, as one more lane ("|", with no
-- policy), so they are neither starved by the groups nor ahead of them: every READY task of a
-- priority waits at most a bounded number of rounds (docs/groups.md "Fair turns").
-- A claim that meets a task its lane may not run now (the lane is at its concurrency, or its rate
-- is used up, or older tasks of the lane wait parked) parks it: state W, in the grouped set, a
-- sorted set of score 0 whose members "<lane>\0<rank>\0<id>" (rank as 16 digits) sort by lane, then
-- rank. When the lane may run one again, its first parked tasks go back behind the head of the
-- ready set, flagged "u", each holding one of the lane's slots until it is claimed. Every common
-- step (enqueue, claim, ack) reads and writes the lanes of a whole batch with one HMGET and one
-- HSET; only parking and letting out cost a command per task.
--   groups hash, field <lane>   "<ready>|<last>|<slots>[|<parked>|<legacy>|<window>|<count>]":
--     ready    tasks READY (parked included): what `groups` shows, and when the record may go
--     last     the lane's last virtual time per priority, as the ready-set score it gave
--              ("<score>[,<score>...]": at most LAST_BANDS_MAX priorities, the newest first); a v1
--              record's, a virtual time alone, reads as one of priority -1000
--     slots    the ids (comma-separated) of the tasks using the lane's slots: leased (a lane with a
--              concurrency), an ordered group's retry keeping its place (S, flag h), and tasks let
--              out not claimed yet (R, flag u). Every read checks them against their states
--              (lanes_verify): a task that moved on (acked, cancelled, deleted, quarantined) is
--              dropped, so no count can outlive its task. An ack writes no record.
--     parked   tasks parked in grouped under this lane
--     legacy   tasks let out under format v1, which named no ids (v2 adds none: it only counts down)
--     window, count  the rate window's start (ms) and its claims
--     The record goes when nothing is READY, held, parked or counted in a live window (tick's check
--     sweeps the records whose slots were all acked since); the "|" lane's stays.
--   groups hash, field @<type>  the type's record: its rate window (window, count) and its parked
--     count: READY tasks of the type set aside in grouped under "@<type>" while the type is paused
--     or its window is used up (state W, flag t), by their ready-set score (type_park).
-- Config g:<type> (else gd): "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,
-- <typeRateMs>"; concurrency 0 and rate 0 mean no limit.

-- The separator of a grouped member's parts, and the byte after it (the end of a BYLEX range).
local NUL = '\0'
local LEX_END = '\1'
local AT = 64 -- "@", the first byte of a type's own record
local LANE_PATTERN = '^(%d+)|([%d,]*)|([^|]*)|(%d+)|(%d+)|(%d+)|(%d+)$'
local SHORT_LANE_PATTERN = '^(%d+)|([%d,]*)|([^|]*)$'
-- A state that may use a slot of its lane: its letter, flags and lane.
local SLOT_STATE_PATTERN = '^([LSRW])|%d*|%d*|%d*|%d*|(%l*)|%d*|([^|]*|[^|]*)|'
-- The most parked tasks one step lets out of a lane.
local UNPARK_MAX = 100
-- The most tasks set aside by their type one step puts back.
local TYPE_UNPARK_MAX = 1000
-- The most lanes and types whose time came one claim opens (a tick opens up to its limit).
local OPEN_PER_CLAIM = 100
local MEMBER_PATTERN = '%z(%d+)%z([%w_%.%-]+)$'
-- A READY task of a group never claimed: its flags ("" or "u"), rank, lane ("<type>|<group>") and type.
local FRESH_GROUPED_PATTERN = '^R|0|0|0|%d+|(u?)|(%d+)|(([%w_%.%-]+)|[%w_%.%-]+)||$'
-- The type and group of a state whose group is not empty.
local LANE_OF_STATE_PATTERN = '^[RSLDFW]|%d*|%d*|%d*|%d*|%l*|%d*|([%w_%.%-]+)|([%w_%.%-]+)|'
local GROUP_POLICY_PATTERN = '^(%d+),([01]),(%d+),(%d+),(%d+),(%d+)$'
local NO_GROUP_POLICY = { conc = 0, ordered = false, rate_max = 0, rate_ms = 0, type_max = 0, type_ms = 0 }
-- The lane of the tasks without a group (config fair = 1).
local UNGROUPED = '|'
local LAST_BANDS_MAX = 4

-- The lanes this script read (name -> record, false while being read), those it changed (in
-- order), those whose slots it checked, and the head of each priority in the ready set.
local group_policies = {}
local lanes = {}
local lanes_dirty = {}
local lanes_checked = {}
local fronts = {}
local count_texts = {}

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

-- The policy of a lane's group (the "|" lane has none).
local function lane_policy(config, lane)
  local task_type = lane_type(lane)
  if not task_type then return NO_GROUP_POLICY end
  return group_policy(config, task_type)
end

local function padded(number_text)
  return string.rep('0', 16 - #number_text) .. number_text
end

local function lane_member(lane, rank, id)
  return lane .. NUL .. padded(rank) .. NUL .. id
end

-- A task set aside by its type: "@<type>\0<rank, 16 digits>\0<id>", so a type's tasks come back in
-- rank order.
local function type_member(task_type, rank, id)
  return '@' .. task_type .. NUL .. padded(rank) .. NUL .. id
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

-- A record's table has room for the fields scripts add as they work on it (outs, span, last_score),
-- so adding them rehashes nothing.
local function empty_record()
  return {
    ready = 0, last = '', slots = '', parked = 0, legacy = 0, window = 0, count = 0, dirty = false, outs = false,
    span = false, last_score = false,
  }
end

-- Loads the records of the lanes (or @<type>s) named that this script has not read yet: one HMGET.
-- A record is a table of its fields, built once; its slots stay the record's text ("" or ids
-- joined by ","), and its last times the text they were read as until enqueue gives a new one.
local function lanes_load(names)
  local missing = {}
  for _, name in ipairs(names) do
    if lanes[name] == nil then
      lanes[name] = false -- asked for: read below
      missing[#missing + 1] = name
    end
  end
  if #missing == 0 then return end
  local values = read_many('HMGET', K.groups, missing)
  for i, name in ipairs(missing) do
    local text, record = values[i], nil
    if text then
      local ready, last, slots = string.match(text, SHORT_LANE_PATTERN)
      if ready then
        record = {
          ready = tonumber(ready), last = last, slots = slots, parked = 0, legacy = 0, window = 0, count = 0, dirty = false,
          outs = false, span = false, last_score = false,
        }
      else
        local parked, legacy, window, count
        ready, last, slots, parked, legacy, window, count = string.match(text, LANE_PATTERN)
        if ready then
          record = {
            ready = tonumber(ready), last = last, slots = slots, parked = tonumber(parked),
            legacy = tonumber(legacy), window = tonumber(window), count = tonumber(count), dirty = false,
            outs = false, span = false, last_score = false,
          }
        end
      end
    end
    lanes[name] = record or empty_record()
  end
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

-- How many tasks a lane's record names in its slots.
local function slot_count(record)
  local slots = record.slots
  if slots == '' then return 0 end
  local n, at = 1, string.find(slots, ',', 1, true)
  while at do
    n = n + 1
    at = string.find(slots, ',', at + 1, true)
  end
  return n
end

local function slot_ids(record)
  local list = {}
  for id in string.gmatch(record.slots, '[^,]+') do list[#list + 1] = id end
  return list
end

local function has_slot(record, id)
  local slots = record.slots
  if slots == id then return true end
  return slots ~= '' and string.find(',' .. slots .. ',', ',' .. id .. ',', 1, true) ~= nil
end

local function add_slot(name, record, id)
  record.slots = record.slots == '' and id or record.slots .. ',' .. id
  lane_touch(name, record)
end

local function drop_slot(name, record, id)
  local slots = record.slots
  if slots == id then
    record.slots = ''
  elseif string.find(slots, ',', 1, true) then
    local kept = {}
    for slot in string.gmatch(slots, '[^,]+') do
      if slot ~= id then kept[#kept + 1] = slot end
    end
    record.slots = table.concat(kept, ',')
  end
  lane_touch(name, record)
end

-- The first bytes of the states that may use a slot: L, S, R, W (the common D of an acked lease
-- needs no match).
local SLOT_LETTERS = { [76] = true, [83] = true, [82] = true, [87] = true }

-- What a state's task does with a slot of `lane`: "lease" (leased), "held" (an ordered group's
-- retry keeping its place), "out" (let out, not claimed yet: READY, or set aside by its type with
-- its slot kept), or nil (it uses none).
local function slot_kind(text, lane)
  if not SLOT_LETTERS[string.byte(text, 1)] then return nil end
  local letter, flags, task_lane = string.match(text, SLOT_STATE_PATTERN)
  if not letter or task_lane ~= lane then return nil end
  if letter == 'L' then return 'lease' end
  if letter == 'S' then return string.find(flags, 'h', 1, true) and 'held' or nil end
  return string.find(flags, 'u', 1, true) and 'out' or nil
end

local NO_TEXTS = {}

-- Checks the slots of the loaded lanes `names` against their tasks' states (one HMGET for all),
-- once per lane per script (slots this script adds are in its writes, not written yet): a task
-- that no longer uses its slot is dropped, and `outs` counts the lanes' tasks let out. Returns the
-- state texts of the leases still holding, by id. The common lane, one lease acked since, costs
-- one field of the HMGET and no table.
local function lanes_verify(names)
  local fields, ids, owners = {}, {}, {}
  for _, name in ipairs(names) do
    local r = lanes[name]
    if r and not lanes_checked[name] then
      lanes_checked[name] = true
      r.outs = 0
      if r.slots ~= '' then
        if string.find(r.slots, ',', 1, true) then
          for id in string.gmatch(r.slots, '[^,]+') do
            ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = id, name, id .. ':s'
          end
        else
          ids[#ids + 1], owners[#owners + 1], fields[#fields + 1] = r.slots, name, r.slots .. ':s'
        end
        r.slots = '' -- rebuilt below from the tasks still using a slot
      end
    end
  end
  if #ids == 0 then return NO_TEXTS end
  local values = read_many('HMGET', K.task, fields)
  local texts = NO_TEXTS
  for i, id in ipairs(ids) do
    local name, value = owners[i], values[i]
    local r = lanes[name]
    -- (The common state here, an acked lease's D, needs no match.)
    local kind = value and SLOT_LETTERS[string.byte(value, 1)] and slot_kind(value, name)
    -- A state that cannot be read may be a lease still running: it keeps its slot until a script
    -- that meets it in its set (the reclaim at its deadline, a claim, the check) quarantines it.
    if not kind and value and SLOT_LETTERS[string.byte(value, 1)] and not string.match(value, SLOT_STATE_PATTERN) then
      kind = 'unread'
    end
    if kind then
      r.slots = r.slots == '' and id or r.slots .. ',' .. id
      if kind == 'out' then
        r.outs = r.outs + 1
      elseif kind == 'lease' then
        if texts == NO_TEXTS then texts = {} end
        texts[id] = value
      end
    else
      lane_touch(name, r)
    end
  end
  return texts
end

-- Writes the lane records this script changed: one HSET and at most one HDEL. `now` 0: unknown
-- (a rate window is then kept).
local function lanes_flush(now)
  local fields, gone = {}, {}
  for _, name in ipairs(lanes_dirty) do
    local r = lanes[name]
    r.dirty = false
    local slots = r.slots
    if name ~= UNGROUPED and slots == '' and r.ready <= 0 and r.parked <= 0 and r.legacy <= 0 and
      (r.count == 0 or (r.span and r.window + r.span <= now)) then
      gone[#gone + 1] = name
    else
      fields[#fields + 1] = name
      local head = count_text(r.ready) .. '|' .. (r.last_score and fmt(r.last_score) or r.last) .. '|' .. slots
      if r.parked > 0 or r.legacy > 0 or r.count > 0 then
        fields[#fields + 1] = head .. '|' .. count_text(r.parked) .. '|' .. count_text(r.legacy) .. '|' .. fmt(r.window) ..
          '|' .. count_text(r.count)
      else
        fields[#fields + 1] = head
      end
    end
  end
  lanes_dirty = {}
  write_many('HSET', K.groups, fields, 2)
  write_many('HDEL', K.groups, gone)
end

-- The window a claim at `now` counts in: now's window, or a later one a caller with a clock ahead
-- opened already (a window never moves backwards, so clocks that disagree cannot reopen one).
local function rate_window(record, span, now)
  local window = now - now % span
  if record.window > window then return record.window end
  return window
end

-- Whether a rate of `max` claims per `span` ms lets one more claim happen now; else when it will.
local function rate_open(record, max, span, now)
  if max == 0 then return true end
  record.span = span
  local window = rate_window(record, span, now)
  if record.window ~= window or record.count < max then return true end
  return false, window + span
end

-- Counts one claim in a rate window.
local function rate_count(name, record, max, span, now)
  if max == 0 then return end
  local window = rate_window(record, span, now)
  if record.window ~= window then record.window, record.count = window, 0 end
  record.count, record.span = record.count + 1, span
  lane_touch(name, record)
end

-- Claims left in the window of `now` (after `reserved` let out for it).
local function rate_room(record, max, span, now, reserved)
  local window = rate_window(record, span, now)
  local used = record.window == window and record.count or 0
  return max - used - reserved
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

-- A lane or a type (`@<type>`) waits in groupwait until `opens_at`, when it may run again; config
-- nextDue counts it, so a claim (and a wake-up) comes then.
local function lane_wait(name, opens_at, config)
  redis.call('ZADD', K.groupwait, opens_at, name)
  config_get(config, 'nextDue')
  note_due(config, opens_at)
end

-- A task was quarantined (its record could not be read): when its body names a group, the group may
-- have lost a task that held its slot or its turn, so the next claim looks at it (groupwait, due at
-- once) and lets out what it may; its slots are checked against the states then, and an unreadable
-- one holds none. `task` is read_record()'s; the body is read when it was not loaded.
local function after_quarantine(id, task, config)
  local info = task.body_info
  if not info then
    local body = task.body or redis.call('HGET', K.task, id)
    info = body and string.byte(body, 1) == BODY_FORMAT_BYTE and parse_body(body) or nil
  end
  if info and info.group ~= '' then lane_wait(lane_of(info.type, info.group), 0, config) end
end

-- Parks a READY task of a lane: state W, in the grouped set (the caller takes it out of ready). A
-- task let out gives its slot back.
local function lane_park(writes, lane, record, id, state)
  if string.find(state.flags, 'u', 1, true) then
    state.flags = string.gsub(state.flags, 'u', '')
    if has_slot(record, id) then
      drop_slot(lane, record, id)
      if record.outs then record.outs = record.outs - 1 end
    elseif record.legacy > 0 then
      record.legacy = record.legacy - 1
    end
  end
  state.letter = 'W'
  put_state(writes, id, state)
  zadd(writes, K.grouped, 0, lane_member(lane, state.rank, id))
  record.parked = record.parked + 1
  lane_touch(lane, record)
end

-- How many more tasks a lane may let out now (its concurrency, its rate window), and when its
-- window opens if the rate is what stops it.
local function lane_room(lane, record, config, now)
  local policy = lane_policy(config, lane)
  local room = UNPARK_MAX
  lanes_verify({ lane })
  if policy.conc > 0 then
    room = math.min(room, policy.conc - slot_count(record) - record.legacy)
  end
  if policy.rate_max > 0 then
    local open, opens_at = rate_open(record, policy.rate_max, policy.rate_ms, now)
    if not open then return 0, opens_at end
    room = math.min(room, rate_room(record, policy.rate_max, policy.rate_ms, now, (record.outs or 0) + record.legacy))
  end
  return room, nil
end

-- The first parked members of `prefix` (a lane, or "@<type>"), at most `limit`, with their ids, the
-- number parsed from each (rank or score) and the states of their tasks (one HMGET).
local function parked_page(prefix, limit)
  local members = redis.call('ZRANGE', K.grouped, '[' .. prefix .. NUL, '[' .. prefix .. LEX_END, 'BYLEX', 'LIMIT', 0, limit)
  local ids, numbers, fields = {}, {}, {}
  for i, member in ipairs(members) do
    local number, id = string.match(member, MEMBER_PATTERN)
    ids[i], numbers[i] = id or '', number or '0'
    fields[i] = (id or '') .. ':s'
  end
  local values = read_many('HMGET', K.task, fields)
  return members, ids, numbers, values
end

-- A lane with parked tasks lets out as many as it may run now, first by rank: back into the ready
-- set right behind the head of their priority, flagged "u", each holding a slot until it is claimed
-- (immediate writes). A lane its rate stops waits in groupwait for the next window. A member whose
-- task cannot be read is quarantined; one whose task moved on, or that has no state, is dropped.
local function lane_unpark(lane, config, now)
  local record = lane_get(lane)
  if record.parked <= 0 then return end
  local room, opens_at = lane_room(lane, record, config, now)
  if opens_at then lane_wait(lane, opens_at, config) end
  if room <= 0 then return end
  local members, ids, ranks, values = parked_page(lane, math.min(room, record.parked))
  if #members == 0 then record.parked = 0; lane_touch(lane, record); return end
  local writes, dropped = new_writes(), false
  for i, id in ipairs(ids) do
    local value = values[i]
    local state, problem = nil, nil
    if value then state, problem = parse_state(value) end
    record.parked = record.parked - 1
    if not value then
      -- No state: no parked task (parking writes one). A member of a task deleted or quarantined
      -- while its record could not be read (nothing could name its member), its id perhaps given
      -- to a task since: dropped. (A member's rank names the task it was, below.)
      record.ready = record.ready - 1
      zrem(writes, K.grouped, members[i])
      dropped = true
    elseif not state then
      record.ready = record.ready - 1
      quarantine(writes, id, problem, now, members[i])
      dropped = true
    else
      zrem(writes, K.grouped, members[i])
      if state.letter == 'W' and lane_of(state.type, state.group) == lane and padded(state.rank) == ranks[i] then
        state.letter, state.flags = 'R', state.flags .. 'u'
        put_state(writes, id, state)
        zadd(writes, K.ready, behind_front(state.rank), id)
        add_slot(lane, record, id)
        record.outs = (record.outs or 0) + 1
      else
        dropped = true -- a member whose task moved on
      end
    end
  end
  lane_touch(lane, record)
  apply(writes)
  -- A member it could not let out took a place of this step: the next claim lets out the next.
  if dropped and record.parked > 0 then lane_wait(lane, 0, config) end
end

-- A READY task of a type that may not run now (paused, or its rate window used up) is set aside: in
-- grouped under "@<type>" by its rank, state W with flag t (a task let out keeps its
-- "u" and its lane's slot), so it holds no place among the heads of the ready set; type_unpark puts
-- it back when the type may run. The caller takes it out of ready.
local function type_park(writes, task_type, id, state)
  state.letter, state.flags = 'W', state.flags .. 't'
  put_state(writes, id, state)
  zadd(writes, K.grouped, 0, type_member(task_type, state.rank, id))
  local name = '@' .. task_type
  local record = lane_get(name)
  record.parked = record.parked + 1
  lane_touch(name, record)
end

-- Puts back up to `limit` tasks set aside by their type, in rank order: at their rank while the queue
-- takes no fair turns (where they were), else right behind the head of their priority, keeping
-- their order (the virtual time of a priority never goes back).
-- Returns how many are still set aside.
local function type_unpark(task_type, limit, config, now)
  local name = '@' .. task_type
  local record = lane_get(name)
  if record.parked <= 0 or limit <= 0 then return record.parked end
  local members, ids, ranks, values = parked_page(name, math.min(limit, record.parked))
  if #members == 0 then record.parked = 0; lane_touch(name, record); return 0 end
  local writes = new_writes()
  local fair = config_get(config, 'fair') == '1'
  local placed = {}
  for i, id in ipairs(ids) do
    local value = values[i]
    local state, problem = nil, nil
    if value then state, problem = parse_state(value) end
    record.parked = record.parked - 1
    if not value then
      zrem(writes, K.grouped, members[i]) -- no parked task: a member left by one (see lane_unpark)
    elseif not state then
      quarantine(writes, id, problem, now, members[i])
      after_quarantine(id, {}, config) -- a task let out of its group may have held its slot
    else
      zrem(writes, K.grouped, members[i])
      if state.letter == 'W' and string.find(state.flags, 't', 1, true) and state.type == task_type
        and padded(state.rank) == ranks[i] then
        state.letter, state.flags = 'R', string.gsub(state.flags, 't', '')
        put_state(writes, id, state)
        local score = ranks[i]
        if fair then
          local band = band_of(score)
          placed[band] = (placed[band] or 0) + 1
          score = band * RANK_SEQ_SPAN + front_or_start(band) + placed[band]
        end
        zadd(writes, K.ready, score, id)
      end
    end
  end
  lane_touch(name, record)
  apply(writes)
  return record.parked
end

-- A task of a lane becomes READY at its turn (enqueue, a due scheduled task, requeue, repair): into
-- the ready set at its lane's next virtual time, or parked when the lane has parked tasks (it waits
-- its turn behind them, by rank). An ordered lane keeps all its READY tasks parked but one, its
-- head, so they run in rank order whenever they became READY: this one is parked (written at once),
-- and the lane given a head if it has none and nothing held. Other writes go to `writes`; the caller
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
    if record.slots == '' and record.legacy <= 0 then lane_unpark(lane, config, now) end
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
  if record.parked > 0 or group_policy(config, state.type).ordered then
    state.flags = state.flags .. 'u'
    add_slot(lane, record, id)
    if record.outs then record.outs = record.outs + 1 end
  end
  state.letter = 'R'
  put_state(writes, id, state)
  zadd(writes, K.ready, behind_front(state.rank), id)
end

-- A task of a lane stopped using one of its slots (done, failed, retried later, cancelled):
-- the lane may run its next parked task.
local function lane_release(lane, id, config, now)
  local record = lane_get(lane)
  drop_slot(lane, record, id)
  if record.parked > 0 then lane_unpark(lane, config, now) end
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
    if has_slot(record, id) then drop_slot(lane, record, id)
    elseif record.legacy > 0 then record.legacy = record.legacy - 1 end
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

-- A queue of format v1, or a new one, becomes v2 at the first script that writes it this way:
-- config v = 2 stops the scripts of a v1 release before they write anything, and the guard stops a
-- v0 worker's claim before it pops anything (its first step reads the due scheduled tasks, and the
-- guard's record is one it cannot parse). A v1 queue with groups takes fair turns from then on.
-- `config` must carry v (and fair, or config_get reads it).
local function upgrade_format(config)
  if config.v == FORMAT_TEXT then return end
  local had = config.v
  redis.call('HSET', K.config, 'v', FORMAT_TEXT)
  config.v = FORMAT_TEXT
  redis.call('HSET', K.task, V0_GUARD, V0_GUARD_TEXT)
  redis.call('ZADD', K.scheduled, 0, V0_GUARD)
  if had and config_get(config, 'fair') ~= '1' and redis.call('HLEN', K.groups) > 0 then start_fair(config) end
  -- Records quarantined before format v2 have no mark: the first page now, the check the rest.
  local ids = redis.call('ZRANGE', K.corrupt, 0, VARIADIC_MAX - 1)
  if #ids == 0 then return end
  local values, fields = record_fields(ids, true, false)
  local marks = {}
  for i = 1, #fields, 2 do
    local value, body = values[i], values[i + 1]
    if (value or body) and not (value and string.sub(value, 1, 2) == QUARANTINED) then
      marks[#marks + 1] = fields[i]
      marks[#marks + 1] = QUARANTINED .. (value or '')
    end
  end
  write_many('HSET', K.task, marks, 2)
end

-- Lanes and types whose time came (a rate window opened, a type resumed), at most `limit` of them:
-- lanes let their parked tasks out, types put back what they set aside. The rest stay due in
-- groupwait for the next call.
local function open_windows(config, now, limit, paused_types)
  local due = redis.call('ZRANGEBYSCORE', K.groupwait, '-inf', fmt(now), 'LIMIT', 0, limit)
  if #due == 0 then return end
  write_many('ZREM', K.groupwait, due)
  for _, name in ipairs(due) do
    if string.byte(name, 1) ~= AT then
      lane_unpark(name, config, now)
    else
      local task_type = string.sub(name, 2)
      local paused = paused_types and paused_types[task_type]
      if not paused then
        local rules = group_policy(config, task_type)
        local limit_now, next_time = TYPE_UNPARK_MAX, 0
        if rules.type_max > 0 then
          local record = lane_get(name)
          local open, opens_at = rate_open(record, rules.type_max, rules.type_ms, now)
          if open then
            limit_now = math.min(limit_now, rate_room(record, rules.type_max, rules.type_ms, now, 0))
            next_time = rate_window(record, rules.type_ms, now) + rules.type_ms
          else
            limit_now, next_time = 0, opens_at
          end
        end
        if type_unpark(task_type, limit_now, config, now) > 0 then lane_wait(name, next_time, config) end
      end
    end
  end
end

-- The types paused on their own (config pauses), as a set, or nil.
local function paused_types_of(config)
  local text = config_get(config, 'pauses')
  if not text then return nil end
  local set = {}
  for name in string.gmatch(text, '[^,]+') do set[name] = true end
  return set
end

-- Moves up to `limit` due SCHEDULED tasks to READY with the rank they were given at enqueue (a
-- task of a group into its lane), opens up to `open_limit` lanes and types whose time came, and
-- keeps config nextDue exact. Costs nothing while nothing is due. The caller runs lanes_flush().
-- Reads the group records of the loaded `tasks` (by id) that have a group, and checks their slots:
-- one HMGET for the records and one for the slots' states, instead of one of each per group as
-- the moves below meet them.
local function lanes_of_tasks(ids, tasks)
  local names = {}
  for _, id in ipairs(ids) do
    local state = tasks[id].state
    if state and not tasks[id].problem and state.group ~= '' then names[#names + 1] = lane_of(state.type, state.group) end
  end
  lanes_load(names)
  lanes_verify(names)
end

local function promote_due(config, now, now_text, limit, open_limit)
  local next_due = tonumber(config.nextDue)
  if next_due ~= nil and next_due > now then return 0 end
  local due = redis.call('ZRANGEBYSCORE', K.scheduled, SCHEDULED_FROM, fmt(now), 'LIMIT', 0, limit)
  if #due > 0 then
    local tasks = load(due, false)
    lanes_of_tasks(due, tasks)
    local writes = new_writes()
    for _, id in ipairs(due) do
      local task = tasks[id]
      if task.problem or not task.state then
        quarantine(writes, id, task.problem or 'a SCHEDULED task without its state', now)
        after_quarantine(id, task, config)
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
  open_windows(config, now, open_limit or limit, paused_types_of(config))
  set_next_due(config, earliest_due())
  return #due
end
--------------------------------------------------------------------------------------------------
-- Wake-ups (docs/wake-ups.md). On AWS a worker runs only when something invokes it, so whoever
-- makes work fall due arranges for a worker to look then. Config `wake` is the earliest time one is
-- arranged for: a wake-up message due then ("<ms>|<call id>": the call that asked for it, so the
-- same call repeated after a lost reply is told again), or, when in the past, the last claim of a
-- worker still draining, which arranges the next wake-up itself when it stops (rest.lua).

-- The calls of the reclaimer's tick say so in their ids (Queue.tick).
local TICK_CALL = 'tick-'

-- Whether a worker will look at the queue by `due`: a wake-up arranged for no later, or a worker
-- that claimed within WAKE_ACTIVE_MS. For the reclaimer's tick (`from_tick`), a wake-up arranged for
-- later than now by anyone but a tick counts for nothing: the tick cannot know it was ever sent (a
-- producer's reply lost after the mark was written), and one more message costs an empty claim.
local function wake_covers(config, now, due, from_tick)
  local wake = wake_time(config)
  if wake == nil or wake > due or wake < now - WAKE_ACTIVE_MS then return false end
  if not from_tick or wake <= now then return true end
  return string.find(config.wake, '|' .. TICK_CALL, 1, true) ~= nil
end

-- The wake-up a call arranged in an earlier run of itself (a store's repeat after a lost reply):
-- its time, while it still matters; else nil.
local function repeated_wake(config, now, call)
  local wake = wake_time(config)
  if wake and wake >= now - WAKE_ACTIVE_MS and config.wake == fmt(wake) .. '|' .. call then return wake end
  return nil
end

-- Work falls due at `due` (ms; before now means now). Returns the time the caller must send a
-- wake-up for, and records it in config `wake` (with `call`, the caller's id for this call); nil
-- when one is arranged already, or when `due` is more than `horizon` ms away (a reclaimer run
-- closer to it arranges that one). A repeat of the call that recorded the mark (a store's retry
-- after a lost reply) is answered the mark's time again.
local function need_wake(config, now, due, horizon, call)
  if due < now then due = now end
  if due > now + horizon then return nil end
  local from_tick = call ~= nil and string.sub(call, 1, #TICK_CALL) == TICK_CALL
  if wake_covers(config, now, due, from_tick) then return call and repeated_wake(config, now, call) end
  local text = fmt(due)
  if call then text = text .. '|' .. call end
  redis.call('HSET', K.config, 'wake', text)
  config.wake = text
  return due
end

-- A claim: a worker is draining now. Written at most every WAKE_ACTIVE_MS / 2, so a busy queue pays
-- one HSET every few seconds, not one per claim.
local function mark_active(config, now)
  local wake = wake_time(config)
  if wake == nil or wake > now or wake < now - WAKE_ACTIVE_MS / 2 then
    local text = fmt(now)
    redis.call('HSET', K.config, 'wake', text)
    config.wake = text
  end
end

-- When scheduled work (or a group or type waiting to run again) next falls due, or an ordered
-- queue's hold ends; nil when neither. `config` carries nextDue, ordered and hold.
local function next_due_of(config, now)
  local due = tonumber(config.nextDue)
  if due == nil then due = earliest_due() end
  if due >= NOTHING_DUE then due = nil end
  local hold = hold_of(config)
  if config.ordered == '1' and hold and hold > now and (due == nil or hold < due) then due = hold end
  return due
end

-- Work was taken away (cancel, delete): a wake-up arranged for later, when nothing falls due by
-- then any more, is forgotten (`now` 0: unknown, kept), and so is an ordered queue's hold for a
-- task that left. `config` carries wake, nextDue, ordered, hold.
local function forget_marks(config, now, gone)
  local hold, held = hold_of(config)
  if held and gone[held] then
    redis.call('HDEL', K.config, 'hold')
    config.hold = nil
  end
  local wake = wake_time(config)
  if now == 0 or not wake or wake <= now then return end
  config.nextDue = fmt(earliest_due())
  local due = next_due_of(config, now)
  if (due == nil or due > wake) and redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.leased) == 0 then
    redis.call('HDEL', K.config, 'wake')
    config.wake = nil
  end
end

-- The checks a call id passes: 1-64 characters of A-Z a-z 0-9 _ . - ("" for none).
local function call_arg(value)
  return name_arg('callId', value or '', 64, true)
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
  lanes_of_tasks(expired, tasks)
  local writes = new_writes()
  for _, id in ipairs(expired) do
    local task = tasks[id]
    if task.problem or not task.state then
      quarantine(writes, id, task.problem or 'a LEASED task without its state', now)
      after_quarantine(id, task, config)
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
  write_many('HDEL', K.task, fields)
  write_many('ZREM', set_key, old)
  return #old
end

-- { ready, scheduled, leased, done, failed, oldestReadyAgeMs, mostOverdueLeaseMs, dueScheduled,
-- corrupt }. `counts` may carry counts the caller already knows, to save their ZCARD.
local function queue_stats(now, counts, config)
  counts = counts or {}
  for _, name in ipairs({ 'ready', 'leased', 'done', 'failed', 'corrupt' }) do
    if counts[name] == nil then counts[name] = redis.call('ZCARD', K[name]) end
  end
  if counts.scheduled == nil then counts.scheduled = scheduled_count() end
  local heads = counts.ready
  counts.ready = heads + redis.call('ZCARD', K.grouped) -- READY tasks parked count too
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
    due_scheduled = redis.call('ZCOUNT', K.scheduled, SCHEDULED_FROM, fmt(now))
  end
  return {
    counts.ready, counts.scheduled, counts.leased, counts.done, counts.failed,
    oldest_ready_age, most_overdue, due_scheduled, counts.corrupt,
    config.paused == '1' and 1 or 0, config.pauses or '',
  }
end

--------------------------------------------------------------------------------------------------
-- The consistency check (check.lua, docs/design.md "Checking a queue"): reads the queue in bounded
-- steps and reports every broken invariant it finds, each with a code, the id or group it is about,
-- and what was wrong; with `repair`, it repairs what can be repaired safely, in the same step. A
-- step reads at most `count` records; its cursor says where the next goes on: "" to start, then
-- "tasks:<hscan cursor>", "sets:<set>:<offset>", "lanes:<hscan cursor>", and "" again at the end.
-- Each step is one script call, so what it sees of the records it reads is consistent; across
-- steps a live queue moves on (a task may be seen twice, or not at all, in a step of its set).
-- The reclaimer's tick runs a step of it every run, repairing (sweep_step).

-- The sets the check reads member by member, in order (after the task hash).
local CHECK_SETS = { 'ready', 'scheduled', 'leased', 'done', 'failed', 'corrupt', 'grouped' }
local SET_OF_LETTER = { R = 'ready', S = 'scheduled', L = 'leased', D = 'done', F = 'failed', W = 'grouped' }
-- The records one tick's sweep reads.
local SWEEP_PAGE = 100

local function report(problems, code, subject, detail, repaired)
  problems[#problems + 1] = code
  problems[#problems + 1] = subject
  problems[#problems + 1] = detail
  problems[#problems + 1] = repaired and 1 or 0
end

-- The queue's config: the format guard, nextDue, an ordered queue's hold, the wake mark.
local function check_config(config, now, problems, repair)
  if config.v == FORMAT_TEXT and (not redis.call('ZSCORE', K.scheduled, V0_GUARD) or
    redis.call('HGET', K.task, V0_GUARD) ~= V0_GUARD_TEXT) then
    if repair then
      redis.call('HSET', K.task, V0_GUARD, V0_GUARD_TEXT)
      redis.call('ZADD', K.scheduled, 0, V0_GUARD)
    end
    report(problems, 'v0_guard', V0_GUARD, 'the guard that stops workers of format v0 is missing', repair)
  end
  local next_due, earliest = tonumber(config.nextDue), earliest_due()
  if next_due and next_due > earliest then
    if repair then set_next_due(config, earliest) end
    report(problems, 'next_due', 'nextDue', 'config nextDue is ' .. fmt(next_due) .. ', after work due at ' ..
      fmt(earliest) .. ': claims would not promote it', repair)
  end
  local hold, id = hold_of(config)
  if hold and hold > now and id then
    local state = redis.call('HGET', K.task, id .. ':s')
    if not state or string.sub(state, 1, 1) ~= 'R' then
      if repair then redis.call('HDEL', K.config, 'hold') end
      report(problems, 'hold', id, 'the ordered queue is held until ' .. fmt(hold) .. ' for a task that is not READY', repair)
    end
  end
  -- A mark ahead of `now` by less than WAKE_ACTIVE_MS points at nothing for a moment at most (a
  -- worker's claim whose clock is ahead, a wake-up for work just taken away): not a problem.
  local wake = wake_time(config)
  local skew = WAKE_ACTIVE_MS
  if wake and wake > now + skew then
    local due = earliest_due() -- what is due, not what config nextDue says
    if due >= NOTHING_DUE then due = nil end
    if config.ordered == '1' and hold and hold > now and (due == nil or hold < due) then due = hold end
    local idle = redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.leased) == 0
    if wake > now + skew + WAKE_HORIZON_MAX_MS or (idle and (due == nil or due > wake)) then
      if repair then redis.call('HDEL', K.config, 'wake') end
      report(problems, 'wake', 'wake', 'a wake-up is arranged for ' .. fmt(wake) .. ', when nothing falls due', repair)
    end
  end
end

-- Puts an id back into the set its readable state names (a repair): READY at its rank (its group's
-- turn is lost: right behind the head of its priority), the others at their time.
local function put_back(writes, id, state, now)
  local letter = state.letter
  if letter == 'R' then
    zadd(writes, K.ready, state.group ~= '' and behind_front(state.rank) or state.rank, id)
  elseif letter == 'W' then
    if string.find(state.flags, 't', 1, true) then
      zadd(writes, K.grouped, 0, type_member(state.type, state.rank, id))
    else
      zadd(writes, K.grouped, 0, lane_member(lane_of(state.type, state.group), state.rank, id))
    end
  else
    zadd(writes, K[SET_OF_LETTER[letter]], state.at, id)
  end
end

-- One page of the task hash: every id met is in exactly the set its record names (a quarantined
-- one in corrupt only), its record can be read, it has its body unless DONE, its attempts are
-- within its maximum, a lease's generation is not above the lease counter, and a task using a
-- slot of a group with a concurrency (a lease, a held retry, one let out) is named by the group's
-- record.
local function check_tasks(config, now, cursor, count, problems, repair)
  local page = redis.call('HSCAN', K.task, cursor, 'COUNT', count)
  local ids, seen = {}, {}
  for i = 1, #page[2], 2 do
    local field = page[2][i]
    if string.byte(field, 1) ~= 35 then -- "#": the lease counter, the v0 guard
      local id = string.match(field, '^(.*):[sx]$') or field
      if not seen[id] then
        seen[id] = true
        ids[#ids + 1] = id
      end
    end
  end
  if #ids == 0 then return page[1] end
  local fields = {}
  for _, id in ipairs(ids) do
    fields[#fields + 1] = id .. ':s'
    fields[#fields + 1] = id
    fields[#fields + 1] = id .. ':x'
  end
  fields[#fields + 1] = LEASE_COUNTER
  local values = read_many('HMGET', K.task, fields)
  local counter = tonumber(values[#fields])
  local scores = {}
  for _, name in ipairs(CHECK_SETS) do
    if name ~= 'grouped' then scores[name] = read_many('ZMSCORE', K[name], ids) end
  end
  -- Each task's record, and the member a parked one must have in grouped.
  local records, members, member_of = {}, {}, {}
  local lane_names = {}
  for i, id in ipairs(ids) do
    local task = read_record(values[3 * i - 2] or nil, values[3 * i - 1] or nil)
    task.reason = values[3 * i] or nil
    records[i] = task
    local state = task.state
    if not task.reason and state and state.letter == 'W' then
      local member = string.find(state.flags, 't', 1, true) and type_member(state.type, state.rank, id) or
        lane_member(lane_of(state.type, state.group), state.rank, id)
      member_of[i] = member
      members[#members + 1] = member
    end
    if not task.reason and state and state.group ~= '' then lane_names[#lane_names + 1] = lane_of(state.type, state.group) end
  end
  local in_grouped = {}
  if #members > 0 then
    local found = read_many('ZMSCORE', K.grouped, members)
    for j, member in ipairs(members) do in_grouped[member] = found[j] end
  end
  lanes_load(lane_names)
  local writes = new_writes()
  for i, id in ipairs(ids) do
    local task = records[i]
    local state = task.state
    local expected
    if task.reason then
      expected = 'corrupt'
      local value = values[3 * i - 2] or nil
      if not value or string.sub(value, 1, 2) ~= QUARANTINED then
        report(problems, 'quarantine_mark', id, 'quarantined, but its state does not say so: a script reading ' ..
          'the state alone would take it for a task in its queue', repair)
        if repair then put(writes, id .. ':s', QUARANTINED .. (value or '')) end
      end
    elseif task.problem == 'no record' then
      expected = nil -- a field alone (a quarantine reason without its set is reported below)
    elseif task.problem then
      report(problems, 'unreadable', id, 'its record cannot be read (' .. task.problem .. ') and is not quarantined', repair)
      if repair then
        quarantine(writes, id, task.problem, now)
        after_quarantine(id, task, config)
      end
    else
      expected = state and SET_OF_LETTER[state.letter] or 'ready'
    end
    if expected then
      local found = {}
      for _, name in ipairs(CHECK_SETS) do
        local member = name == 'grouped' and member_of[i]
        if (name == 'grouped' and member and in_grouped[member]) or (name ~= 'grouped' and scores[name][i]) then
          found[#found + 1] = name
        end
      end
      local here, others = false, {}
      for _, name in ipairs(found) do
        if name == expected then here = true else others[#others + 1] = name end
      end
      if not here and not state and expected == 'ready' and #found == 0 then
        -- READY and never claimed: its rank lived only as its score, so it cannot be put back where
        -- it was. Set aside with a reason: counted, listed, and READY again by repair.
        report(problems, 'no_set', id, 'its record says ready, and it is in no set' ..
          (repair and ' (set aside in corrupt: its rank was not recorded; leaseq repair makes it READY)' or ''), repair)
        if repair then
          quarantine(writes, id, 'found in no set by the check: its rank was not recorded', now)
          after_quarantine(id, task, config)
        end
      elseif not here then
        -- Put back where its record says (a quarantined one: in corrupt, its reason kept).
        local fixable = expected == 'corrupt' or state ~= nil
        report(problems, #found == 0 and 'no_set' or 'wrong_set', id, 'its record says ' .. expected ..
          (#found == 0 and ', and it is in no set' or ', and it is in ' .. table.concat(found, ', ')), repair and fixable)
        if repair and fixable then
          if expected == 'corrupt' then zadd(writes, K.corrupt, now, id) else put_back(writes, id, state, now) end
          for _, name in ipairs(others) do
            if name ~= 'grouped' then zrem(writes, K[name], id) end
          end
        end
      end
      if #others > 0 and (here or #found > 1) then
        report(problems, 'two_sets', id, 'it is in ' .. table.concat(found, ' and ') .. '; its record says ' .. expected, repair)
        if repair then
          for _, name in ipairs(others) do
            if name ~= 'grouped' then zrem(writes, K[name], id) end
          end
        end
      end
    end
    if state and not task.reason and not task.problem then
      local has_body = task.body ~= nil
      if state.letter ~= 'D' and not has_body then
        report(problems, 'no_body', id, 'a ' .. expected .. ' task without its body (payload)', repair)
        if repair then quarantine(writes, id, 'a task without its body', now, member_of[i]) end
      elseif state.letter == 'D' and has_body and not task.upgraded then
        report(problems, 'done_body', id, 'a DONE task still has its body', repair)
        if repair then drop_field(writes, id) end
      end
      if tonumber(state.max) > 0 and tonumber(state.attempts) > tonumber(state.max) then
        report(problems, 'attempts', id, 'attempt ' .. state.attempts .. ' of at most ' .. state.max, false)
      end
      -- (Before its first claim under format v2, a queue has no counter: that claim starts it at its `now`.)
      if state.letter == 'L' and counter and tonumber(state.gen) > counter then
        report(problems, 'lease_counter', id, 'its lease generation ' .. state.gen .. ' is above the lease counter ' ..
          fmt(counter) .. ': a later claim could reissue its token', repair)
        if repair then
          counter = tonumber(state.gen)
          put(writes, LEASE_COUNTER, state.gen)
        end
      end
      if state.group ~= '' then
        local lane = lane_of(state.type, state.group)
        local record, rules = lanes[lane], group_policy(config, state.type)
        local kind = slot_kind(state_text(state), lane)
        local needs = kind == 'out' or ((kind == 'lease' or kind == 'held') and rules.conc > 0)
        if needs and not has_slot(record, id) and not (kind == 'out' and record.legacy > 0) then
          report(problems, 'group_slots', lane, id .. ' (' .. kind .. ') uses a slot its group\'s record does not name', repair)
          if repair then add_slot(lane, record, id) end
        end
      end
    end
  end
  apply(writes)
  return page[1]
end

-- One page of a set: every member has a record that names that set (for grouped: the very member
-- its parked task has). A member without one is an orphan, dropped on repair; a record that names
-- another set is reported by the task hash's pages.
local function check_set(name, offset, count, now, problems, repair)
  local key = K[name]
  local page = redis.call('ZRANGE', key, offset, offset + count - 1)
  if #page == 0 then return nil end
  local ids = {}
  for i, member in ipairs(page) do
    if name == 'grouped' then ids[i] = select(2, string.match(member, MEMBER_PATTERN)) or ''
    else ids[i] = member end
  end
  local values = record_fields(ids, true, true)
  local writes, orphans = new_writes(), {}
  local parked_by = {}
  for i, member in ipairs(page) do
    local id = ids[i]
    if not (name == 'scheduled' and member == V0_GUARD) then
      local state_text_value, body, reason = values[3 * i - 2], values[3 * i - 1], values[3 * i]
      local orphan = false
      if name == 'grouped' then
        local state = state_text_value and not reason and parse_state(state_text_value)
        local expected = state and state.letter == 'W' and (string.find(state.flags, 't', 1, true) and
          type_member(state.type, state.rank, id) or lane_member(lane_of(state.type, state.group), state.rank, id))
        orphan = expected ~= member and not (state == nil and state_text_value and not reason) -- unreadable: the task hash's page reports it
        if not orphan then
          local owner = string.match(member, '^([^%z]+)%z')
          parked_by[owner] = (parked_by[owner] or 0) + 1
        end
      else
        orphan = not state_text_value and not body and not reason
      end
      if orphan then
        orphans[#orphans + 1] = member
        report(problems, 'orphan_member', id, 'a member of ' .. name .. ' whose task is not there', repair)
      end
    end
  end
  if repair and #orphans > 0 then write_many('ZREM', key, orphans) end
  -- A group or type with parked members must count them (its record may have gone).
  if name == 'grouped' then
    local owners = {}
    for owner in pairs(parked_by) do owners[#owners + 1] = owner end
    lanes_load(owners)
    for _, owner in ipairs(owners) do
      local record = lanes[owner]
      if record.parked <= 0 then
        local parked = redis.call('ZLEXCOUNT', K.grouped, '[' .. owner .. NUL, '[' .. owner .. LEX_END)
        report(problems, 'group_parked', owner, 'its record counts ' .. record.parked .. ' parked tasks; ' .. parked ..
          ' are parked', repair)
        if repair then
          record.parked = parked
          if string.byte(owner, 1) ~= AT then record.ready = math.max(record.ready, parked) end
          lane_touch(owner, record)
          lane_wait(owner, 0, {})
        end
      end
    end
  end
  return offset + #page
end

-- One page of the groups hash: each record can be read, counts its parked tasks exactly, its slots
-- hold at most its concurrency, and a group (or type) with parked tasks can let one out now, or
-- waits in groupwait for when it can. Slots whose tasks moved on are dropped (the sweep that takes
-- the place of the acks, which write no record), and records with nothing left go.
-- `position` is an HSCAN cursor, and after a ":" how many records of that cursor's page were read
-- already: a small hash (a listpack) comes whole from one HSCAN, and a step reads at most `count` of
-- its records. Returns the position to go on from, "0" when the groups are done.
local function check_lanes(config, now, position, count, problems, repair)
  local cursor, skip = string.match(position, '^(%d+):(%d+)$')
  cursor, skip = cursor or position, tonumber(skip) or 0
  local page = redis.call('HSCAN', K.groups, cursor, 'COUNT', count)
  local entries = page[2]
  local last = math.min(#entries / 2, skip + count)
  local names, texts = {}, {}
  for i = 2 * skip + 1, 2 * last, 2 do
    names[#names + 1] = entries[i]
    texts[entries[i]] = entries[i + 1]
  end
  local after = last < #entries / 2 and cursor .. ':' .. last or page[1]
  if #names == 0 then return after end
  lanes_load(names)
  lanes_verify(names)
  local paused = paused_types_of(config)
  -- Whether each record with parked tasks waits in groupwait: one ZMSCORE for the page.
  local parked_names = {}
  for _, name in ipairs(names) do
    if name ~= UNGROUPED and lanes[name].parked > 0 then parked_names[#parked_names + 1] = name end
  end
  local waiting = {}
  local scores = read_many('ZMSCORE', K.groupwait, parked_names)
  for i, name in ipairs(parked_names) do waiting[name] = scores[i] end
  for _, name in ipairs(names) do
    local record, text = lanes[name], texts[name]
    if not string.match(text, SHORT_LANE_PATTERN) and not string.match(text, LANE_PATTERN) then
      report(problems, 'group_record', name, 'its record cannot be read', repair)
      if repair then lane_touch(name, record) end -- written again from what is known (parked counted below)
    end
    if name ~= UNGROUPED then
      -- Counted when the record says some are parked (members of a record that says none are found
      -- by the grouped set's own step): one command per group with parked tasks, none for the rest.
      local parked = record.parked > 0 and
        redis.call('ZLEXCOUNT', K.grouped, '[' .. name .. NUL, '[' .. name .. LEX_END) or 0
      if parked ~= record.parked then
        report(problems, 'group_parked', name, 'its record counts ' .. record.parked .. ' parked tasks; ' .. parked ..
          ' are parked', repair)
        if repair then
          record.parked = parked
          lane_touch(name, record)
        end
      end
      local is_type = string.byte(name, 1) == AT
      local task_type = is_type and string.sub(name, 2) or lane_type(name)
      local rules = group_policy(config, task_type)
      local limit = rules.ordered and 1 or rules.conc
      if not is_type and limit > 0 and slot_count(record) + record.legacy > limit then
        report(problems, 'concurrency', name, (slot_count(record) + record.legacy) .. ' tasks use its slots; its concurrency is ' ..
          limit, false)
      end
      if record.parked > 0 and not waiting[name] then
        local stalled, at = false, now
        if is_type then
          stalled = not (paused and paused[task_type])
        else
          local room, opens_at = lane_room(name, record, config, now)
          stalled, at = room > 0 or opens_at ~= nil, opens_at or now
        end
        if stalled then
          report(problems, 'group_stalled', name, record.parked .. ' parked tasks, and nothing will let them out', repair)
          if repair then lane_wait(name, at > now and at or 0, config) end
        end
      end
    end
  end
  return after
end

-- One step of the check from `cursor`: the problems found (4 values each: code, subject, detail,
-- repaired 1/0) and the cursor to go on from ("" when the check is complete). `count` bounds the
-- records a step reads; the config's checks come with the first step.
local function check_step(config, now, cursor, count, repair)
  local problems = {}
  local phase, position = string.match(cursor, '^(%a+):(.*)$')
  if not phase then
    check_config(config, now, problems, repair)
    phase, position = 'tasks', '0'
  end
  local next_cursor = ''
  if phase == 'tasks' then
    local after = check_tasks(config, now, position, count, problems, repair)
    next_cursor = after == '0' and 'sets:1:0' or 'tasks:' .. after
  elseif phase == 'sets' then
    local index, offset = string.match(position, '^(%d+):(%d+)$')
    index, offset = tonumber(index) or 1, tonumber(offset) or 0
    local name = CHECK_SETS[index]
    if not name then
      next_cursor = 'lanes:0'
    else
      local after = check_set(name, offset, count, now, problems, repair)
      if after and after - offset >= count then next_cursor = 'sets:' .. index .. ':' .. after
      elseif index < #CHECK_SETS then next_cursor = 'sets:' .. (index + 1) .. ':0'
      else next_cursor = 'lanes:0' end
    end
  elseif phase == 'lanes' then
    local after = check_lanes(config, now, position, count, problems, repair)
    next_cursor = after == '0' and '' or 'lanes:' .. after
  end
  return problems, next_cursor
end

-- The tick's slice of the check, repairing what it finds: one step of SWEEP_PAGE records of the whole
-- check from where the last tick's stopped (config `sweep`), and one step of the groups alone (config
-- `lsweep`), so a group nothing would let run starts again within HLEN(groups) / SWEEP_PAGE runs,
-- and the records of groups whose slots were all acked since go.
local function sweep_step(config, now, count)
  for _, field in ipairs({ 'sweep', 'lsweep' }) do
    local cursor = config_get(config, field) or (field == 'lsweep' and 'lanes:0' or '')
    local problems, next_cursor = check_step(config, now, cursor, count, true)
    if field == 'lsweep' and string.sub(next_cursor, 1, 6) ~= 'lanes:' then next_cursor = '' end
    if next_cursor ~= cursor then
      if next_cursor == '' then redis.call('HDEL', K.config, field)
      else redis.call('HSET', K.config, field, next_cursor) end
      config[field] = next_cursor ~= '' and next_cursor or nil
    end
    if field == 'sweep' and redis.call('EXISTS', K.groups) == 0 then break end
  end
end
