-- lua/lib/: the helpers shared by every leaseq script, one file per section, joined in the order
-- of LIB_FILES (bin/generate-lua.ts): arguments, variadic, config, records, writes, steps, groups,
-- wake-ups, check. The generator gives each operation script the helpers it uses (transitively) and
-- the constants of shared/config.ts (FORMAT_VERSION, ID_MAX_BYTES, TIME_MAX_MS, ...) as literals, so
-- each EVAL body is self-contained and every bound is the one TypeScript checks. This file: the
-- storage format, the queue's keys, errors and the arguments' checks.
--
-- Storage format v2 (docs/storage.md). Every key of the queue comes in KEYS, in the order of
-- shared/keys.ts: task, config, ready, scheduled, leased, done, failed, corrupt, seq, grouped,
-- groups, groupwait, schedules, plan, parkedsince.
--   task hash, field <id>     the body, written once at enqueue and dropped at ack
--   task hash, field <id>:s   the state, small, rewritten at every move (absent while a task is
--                             READY and was never claimed). Both records' fields, flags and bounds
--                             are declared in shared/protocol/record.ts; lua/lib/protocol.lua holds
--                             the patterns and state writers generated from it. The lease token is
--                             "<rank>.<gen>", unique per lease.
--   task hash, field <id>:x   why the task was quarantined (ids in the corrupt set only)
--   task hash, field #lease   the queue's lease counter (ids never start with "#")
--   task hash, field !<m>:<key>  flow control's state of a key (m: d dedupe, b debounce, t throttle,
--                             s singleton; lib/flow.lua): ids never start with "!" either
--   task hash, field #v0      and the scheduled set's member #v0 at score 0: the guard that stops a
--                             worker of leaseq 0.1.0 before it pops anything (stamp_format)
--   config hash              v (format version), the queue's settings (configure.lua), nextDue, hold, wake
--   grouped, groups, groupwait  groups and types set aside (see "Groups" below, and docs/groups.md)
--   parkedsince zset          the groups and types with parked tasks, by when their next parked
--                             task became READY (lanes_flush keeps it, docs/groups.md)
--   schedules hash, plan zset   the schedules and when each is next planned (lua/plan.lua, docs/schedules.md)
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

local function keys_of(list)
  return {
    task = list[1], config = list[2], ready = list[3], scheduled = list[4], leased = list[5],
    done = list[6], failed = list[7], corrupt = list[8], seq = list[9], grouped = list[10],
    groups = list[11], groupwait = list[12], schedules = list[13], plan = list[14],
    parkedsince = list[15],
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

-- fmt, each value printed once per script: a batch mostly prints a few values many times (its
-- windows' ends, its lanes' counts), and printing a number costs more than looking it up.
local printed = {}
local function fmt_once(n)
  local text = printed[n]
  if not text then
    text = fmt(n)
    printed[n] = text
  end
  return text
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

-- A name: a task type, a claim or call id (NAME_PATTERN, lua/lib/protocol.lua); "" too when optional.
local function name_arg(name, value, max_bytes, optional)
  if type(value) ~= 'string' or (value == '' and optional) then return value end
  if #value < 1 or #value > max_bytes or not string.find(value, NAME_PATTERN) then
    bad(name .. ' must be ' .. (optional and '0' or '1') .. '-' .. max_bytes .. ' characters of ' .. NAME_CHARACTERS)
  end
  return value
end

-- A task id: ID_PATTERN's characters (":" and "@" too), not ending in ":" and a lower-case letter,
-- which name a task's own fields of the task hash ("<id>:s" its state, "<id>:x" its reason).
local function id_arg(name, value)
  if type(value) ~= 'string' or #value < 1 or #value > ID_MAX_BYTES or not string.find(value, ID_PATTERN) then
    bad(name .. ' must be 1-' .. ID_MAX_BYTES .. ' characters of ' .. ID_CHARACTERS)
  end
  if string.find(value, ID_RESERVED_END) then
    bad(name .. ' must not end in ":" and a lower-case letter (the task hash names its fields "<id>:s", "<id>:x")')
  end
  return value
end

-- A group, as a body holds it: 0 (no group) to GROUP_MAX_BYTES characters of ID_PATTERN's.
local function group_arg(name, value)
  if #value > GROUP_MAX_BYTES or (value ~= '' and not string.find(value, ID_PATTERN)) then
    bad(name .. ' must be 0-' .. GROUP_MAX_BYTES .. ' characters of ' .. ID_CHARACTERS)
  end
  return value
end

-- The fast checks of a batch's hot loops: no message is built unless one fails (then the caller
-- asks name_arg, id_arg or time_arg for it).
local function is_name(value, max_bytes)
  return type(value) == 'string' and #value >= 1 and #value <= max_bytes and string.find(value, NAME_PATTERN) ~= nil
end

local function is_id(value)
  return type(value) == 'string' and #value >= 1 and #value <= ID_MAX_BYTES and string.find(value, ID_PATTERN) ~= nil
    and not string.find(value, ID_RESERVED_END)
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
