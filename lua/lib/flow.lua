-- Flow control per key (docs/flow-control.md): dedupe, debounce and throttle at enqueue. A key's
-- state is one string key of its own, "<prefix>:{<queue>}:fc:<mode>:<key>", under the queue's hash
-- tag, passed in KEYS after the queue's fixed keys (QUEUE_KEY_COUNT of them); it expires by itself
-- (PX), so nothing cleans it:
--   fc:dedupe:<key>    "<taskId>|<untilMs>"     PX ttlMs: the task enqueued first in the window, and
--                                                the window's end
--   fc:debounce:<key>  "<taskId>|<firstAtMs>"   PX until firstAtMs + maxWaitMs: the task holding the
--                                                key, and when its window began
--   fc:throttle:<key>  "<nextFreeAtMs>"         PX until then: the end of the last period taken
-- Decisions compare the times the values hold with the caller's `now` (as every script does; tests
-- travel in time so); the PX expiry only cleans up, a little later or sooner by the clocks' skew.
-- A batch without flow control reads and writes none of them: no command is added per task.

local FLOW_ENTRY_SIZE = 5
-- Per mode: its name as the key holds it, and the bounds of its two numbers.
local FLOW_MODES = {
  dedupe = { a = 'ttlMs', a_min = 1, b = nil },
  debounce = { a = 'delayMs', a_min = 0, b = 'maxWaitMs', b_min = 1 },
  throttle = { a = 'perMs', a_min = 1, b = 'defer', b_min = 0, b_max = 1 },
}

-- The flow entries of an enqueue: `count` of them, 5 values each from ARGV[first]: task index
-- (1..n), mode, key index (in KEYS, after the queue's fixed keys), and two numbers (dedupe: ttlMs, 0;
-- debounce: delayMs, maxWaitMs; throttle: perMs, 1 to defer or 0 to drop). Every value is checked,
-- and each key must be the flow key of its mode under this queue's prefix and hash tag, so no
-- caller can make the script write any other key. Returns flows[task index] = { mode, key, a, b }
-- and the distinct keys in order.
local function flow_args(n, first, count)
  local flows, keys, listed = {}, {}, {}
  local base = string.sub(K.task, 1, #K.task - 4) .. 'fc:' -- "<prefix>:{<queue>}:fc:"
  for e = 1, count do
    local at = first + (e - 1) * FLOW_ENTRY_SIZE
    local label = 'flow entry ' .. e
    local index = int_arg(label .. ' task index', ARGV[at], 1, n)
    local mode = ARGV[at + 1]
    local spec = FLOW_MODES[mode]
    if not spec then bad(label .. ' mode must be dedupe, debounce or throttle, got "' .. string.sub(tostring(mode), 1, 40) .. '"') end
    local key = KEYS[int_arg(label .. ' key index', ARGV[at + 2], QUEUE_KEY_COUNT + 1, #KEYS)]
    local prefix = base .. mode .. ':'
    local name = string.sub(key, #prefix + 1)
    if string.sub(key, 1, #prefix) ~= prefix or #name < 1 or #name > FLOW_KEY_MAX_BYTES or not string.find(name, ID_PATTERN) then
      bad(label .. ' key must be "' .. prefix .. '<key>", the key 1-' .. FLOW_KEY_MAX_BYTES .. ' characters of ' .. ID_CHARACTERS)
    end
    local a = int_arg('task ' .. index .. ' ' .. mode .. '.' .. spec.a, ARGV[at + 3], spec.a_min, FLOW_WINDOW_MAX_MS)
    local b = 0
    if spec.b then
      b = int_arg('task ' .. index .. ' ' .. mode .. '.' .. spec.b, ARGV[at + 4], spec.b_min, spec.b_max or FLOW_WINDOW_MAX_MS)
    end
    if flows[index] then bad('task ' .. index .. ' has more than one flow control; at most one of dedupe, debounce, throttle') end
    flows[index] = { mode = mode, key = key, a = a, b = b }
    if not listed[key] then
      listed[key] = true
      keys[#keys + 1] = key
    end
  end
  return flows, keys
end

-- The values of the flow keys (false when absent): one MGET. A batch names at most BATCH_MAX keys,
-- so the list fits one call of read_many (its first key goes as the "key" of the command).
local function flow_read(keys)
  local values = {}
  if #keys == 0 then return values end
  local key = keys[1]
  if #keys == 1 then
    values[key] = redis.call('GET', key)
    return values
  end
  local rest = {}
  for i = 2, #keys do rest[i - 1] = keys[i] end
  local replies = read_many('MGET', key, rest)
  for i, key in ipairs(keys) do values[key] = replies[i] end
  return values
end

-- A dedupe or debounce key's value: the task holding it and its time (a dedupe's window end, a
-- debounce's window start); nil when absent or unreadable.
local function held_value(text)
  if not text then return nil end
  local id, first = string.match(text, '^([^|]+)|(%d+)$')
  if not id then return nil end
  return id, tonumber(first)
end

-- Whether a task's record says it is waiting, never claimed, for its time: SCHEDULED with no
-- attempt and not holding its group (so removing it is all delete.lua would do for it).
local function replaceable(state_value)
  if not state_value then return false end
  local state = parse_state(state_value)
  return state ~= nil and state.letter == 'S' and state.attempts == '0' and state.flags == ''
end

-- Writes the flow keys a batch changed: SET <key> <value> PX <ms> each (saves: key -> { value, ms }).
local function flow_save(saves, order)
  for _, key in ipairs(order) do
    local save = saves[key]
    if save then redis.call('SET', key, save[1], 'PX', save[2]) end
  end
end
