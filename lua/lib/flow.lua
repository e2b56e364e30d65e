-- Flow control per key (docs/flow-control.md): dedupe, debounce and throttle at enqueue. A key's
-- state is a field of the queue's task hash, named with a first character no id can have ("!"; the
-- hash's own fields start with "#"), so the HMGET that reads a batch's tasks reads it and the
-- batch's HSET writes it: a batch pays no command per task for it.
--   !d:<key>   "<taskId>|<untilMs>"             the task enqueued first in the window, the window's end
--   !b:<key>   "<taskId>|<firstAtMs>|<untilMs>" the task holding the key, when its window began and
--                                                when it ends (firstAtMs + the maxWaitMs it began with)
--   !t:<key>   "<nextFreeAtMs>"                  the end of the last period taken
--   !s:<key>   "<taskId>"                        the singleton task enqueued last (the one that
--                                                waits, until it is claimed); its task runs in the
--                                                lane "<type>|@@s:<key>", one at a time (groups.lua)
-- The last number of the others is their end: decisions compare it with the caller's `now` (as
-- every script does; tests travel in time so), a value whose end is past counts as absent, and the
-- tick's check sweep removes it then (check_tasks, flow_over); a singleton's goes once its task no
-- longer waits (singleton_waiting). A batch without flow control reads and writes none of them.

local FLOW_ENTRY_SIZE = 5
-- The first byte of a flow field: ids never start with it, nor do the hash's own fields.
local FLOW_FIELD_BYTE = 33 -- "!"
-- Per mode: the prefix of its fields, and the bounds of its two numbers.
local FLOW_MODES = {
  dedupe = { prefix = '!d:', a = 'ttlMs', a_min = 1, b = nil },
  debounce = { prefix = '!b:', a = 'delayMs', a_min = 0, b = 'maxWaitMs', b_min = 1 },
  throttle = { prefix = '!t:', a = 'perMs', a_min = 1, b = 'defer', b_min = 0, b_max = 1 },
  singleton = { prefix = '!s:', key_max = SINGLETON_KEY_MAX_BYTES },
}

-- The flow entries of an enqueue: `count` of them, 5 values each from ARGV[first]: task index
-- (1..n), mode, key (1-FLOW_KEY_MAX_BYTES characters of ID_CHARACTERS), and two numbers (dedupe:
-- ttlMs, 0; debounce: delayMs, maxWaitMs; throttle: perMs, 1 to defer or 0 to drop; singleton: 0,
-- 0, and the task's group must be SINGLETON_GROUP_PREFIX .. key, 1-SINGLETON_KEY_MAX_BYTES
-- characters: groups.lua gives its lane a concurrency of 1). Every value is
-- checked; a message is built only for the value that fails (a batch of 100 entries is most of the
-- cost flow control adds, docs/flow-control.md). Returns, by task index, its mode and its field
-- (`modes`, `fields_of`), its two numbers (`a`, `b`), and the distinct fields in order.
local function flow_args(n, first, count)
  local modes, fields_of, a_of, b_of, fields, listed = {}, {}, {}, {}, {}, {}
  for e = 1, count do
    local at = first + (e - 1) * FLOW_ENTRY_SIZE
    local index, mode, key, a, b = tonumber(ARGV[at]), ARGV[at + 1], ARGV[at + 2], tonumber(ARGV[at + 3]), tonumber(ARGV[at + 4])
    local spec = FLOW_MODES[mode]
    if not (index and index % 1 == 0 and index >= 1 and index <= n) then int_arg('flow entry ' .. e .. ' task index', ARGV[at], 1, n) end
    if not spec then bad('flow entry ' .. e .. ' mode must be dedupe, debounce, throttle or singleton, got "' .. string.sub(tostring(mode), 1, 40) .. '"') end
    local key_max = spec.key_max or FLOW_KEY_MAX_BYTES
    if #key < 1 or #key > key_max or not string.find(key, ID_PATTERN) then
      bad('flow entry ' .. e .. ' key must be 1-' .. key_max .. ' characters of ' .. ID_CHARACTERS)
    end
    if not spec.a then
      if a ~= 0 or b ~= 0 then bad('flow entry ' .. e .. ' ' .. mode .. ' takes no numbers: 0 and 0') end
    elseif not (a and a % 1 == 0 and a >= spec.a_min and a <= FLOW_WINDOW_MAX_MS) then
      int_arg('task ' .. index .. ' ' .. mode .. '.' .. spec.a, ARGV[at + 3], spec.a_min, FLOW_WINDOW_MAX_MS)
    end
    if not spec.b then
      b = 0 -- (a singleton's: checked above)
    elseif not (b and b % 1 == 0 and b >= spec.b_min and b <= (spec.b_max or FLOW_WINDOW_MAX_MS)) then
      int_arg('task ' .. index .. ' ' .. mode .. '.' .. spec.b, ARGV[at + 4], spec.b_min, spec.b_max or FLOW_WINDOW_MAX_MS)
    end
    if modes[index] then bad('task ' .. index .. ' has more than one flow control; at most one of dedupe, debounce, throttle, singleton') end
    local field = spec.prefix .. key
    modes[index], fields_of[index], a_of[index], b_of[index] = mode, field, a, b
    if not listed[field] then
      listed[field] = true
      fields[#fields + 1] = field
    end
  end
  return { mode = modes, field = fields_of, a = a_of, b = b_of }, fields
end

-- A dedupe or debounce value: the task holding the key, then its numbers (a dedupe's window end;
-- a debounce's window start and end); nil when absent or unreadable.
local function held_value(text)
  if not text then return nil end
  local id, first, until_ms = string.match(text, '^([^|]+)|(%d+)|?(%d*)$')
  if not id then return nil end
  return id, tonumber(first), tonumber(until_ms)
end

-- Whether a task waits, never claimed (READY, parked or SCHEDULED, 0 attempts, no slot it must
-- keep), from its state text and body as the task hash holds them: what a singleton replaces.
-- Never raises.
local function singleton_waiting(state_value, body)
  if not state_value then return body ~= nil and body ~= false end -- READY, never claimed
  local state = parse_state(state_value)
  if not state or state.attempts ~= '0' then return false end
  local letter = state.letter
  return (letter == 'R' or letter == 'W' or letter == 'S') and not string.find(state.flags, 'h', 1, true)
end

-- Whether a flow field's value is over at `now`: its last number (its end) is past, or it cannot
-- be read. Never raises.
local function flow_over(text, now)
  local end_ms = tonumber(string.match(text, '(%d+)$') or '')
  return not end_ms or end_ms <= now
end

-- Whether a task's record says it is waiting, never claimed, for its time: SCHEDULED with no
-- attempt and not holding its group (so removing it is all delete.lua would do for it).
local function replaceable(state_value)
  if not state_value then return false end
  local state = parse_state(state_value)
  return state ~= nil and state.letter == 'S' and state.attempts == '0' and state.flags == ''
end
