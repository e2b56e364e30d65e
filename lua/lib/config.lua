-- The queue's config (configure.lua writes the settings; the scripts keep nextDue, hold, wake).

-- The scripts read and write one format, FORMAT_VERSION: a queue stored in another is refused
-- before anything is written, with the format found and what to do.
local function format_refused(found)
  error({ code = 'LEASEQ_FORMAT', message = 'the queue is stored in format ' .. found ..
    ', and this release reads and writes format v' .. FORMAT_VERSION .. ' only: drain the queue with ' ..
    'the leaseq release that wrote it, or delete it (leaseq drop), then run this release (docs/storage.md)' })
end

-- A config without `v` is a new queue's, or one of leaseq 0.1.0 (format v0), which kept no config:
-- its tasks are in the task hash, which the first script to write a new queue stamps with `v`
-- before anything else (stamp_format).
local function check_version(version)
  if version == FORMAT_TEXT then return end
  if version then format_refused('v' .. string.sub(version, 1, 10)) end
  if redis.call('EXISTS', K.task) == 1 then format_refused('v0 (leaseq 0.1.0)') end
end

-- A new queue is stamped at the first script that writes it: config v, and the guard that stops a
-- worker of leaseq 0.1.0 (which reads no config) before it pops anything: its claim first reads the
-- due scheduled tasks, meets the guard's member and fails on its record, which it cannot parse.
-- `config` was read with its v (read_config, read_config_fields).
local function stamp_format(config)
  if config.v == FORMAT_TEXT then return end
  redis.call('HSET', K.config, 'v', FORMAT_TEXT)
  config.v = FORMAT_TEXT
  redis.call('HSET', K.task, V0_GUARD, V0_GUARD_TEXT)
  redis.call('ZADD', K.scheduled, 0, V0_GUARD)
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

-- Config fields a step is about to ask for, those the caller's table lacks read together (one HMGET
-- in place of an HGET each).
local function config_prefetch(config, names)
  local known = config_known[config]
  if known == true then return end
  if not known then known = {}; config_known[config] = known end
  local missing = {}
  for _, name in ipairs(names) do
    if not known[name] then missing[#missing + 1] = name end
  end
  if #missing == 0 then return end
  local values = read_many('HMGET', K.config, missing)
  for i, name in ipairs(missing) do
    config[name] = values[i] or nil
    known[name] = true
  end
end

local function config_int(config, field, default)
  local n = tonumber(config[field])
  if n == nil then return default end
  return n
end

-- The store's own clock (ms), from TIME; nil where the engine refuses TIME in a script (the
-- decisions below then take the caller's now, as a queue that trusts its callers' clocks does).
local function store_time()
  local t = redis.pcall('TIME')
  if type(t) ~= 'table' or t.err or not t[2] then return nil end
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The time a destructive decision is taken at (a lease expired, a finished task past its retention,
-- a schedule's slot missed): the caller's `now`, but never later than the store's own clock plus the
-- skew the queue allows, so a caller whose clock runs ahead takes nothing the store's clock says is
-- still live. A queue that trusts its callers' clocks (config callerClock 1: tests and leaseq/testing
-- drive time) takes `now` as it is. (docs/design.md, "Time decisions and their clocks")
-- The latest time such a decision may take: the store's clock plus the skew, or nil when the
-- caller's `now` is taken as given. `config` carries callerClock and skewMs.
local function decision_bound(config)
  if config_get(config, 'callerClock') == '1' then return nil end
  local store_now = store_time()
  return store_now and store_now + config_int(config, 'skewMs', DEFAULT_SKEW_MS)
end

local function decision_time(config, now)
  local bound = decision_bound(config)
  return bound and math.min(now, bound) or now
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
    local lease, max = string.match(text, POLICY_PATTERN)
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

-- The config `hold` of an ordered queue: its time, and the id of the task it waits for (a hold of
-- format v1 names none).
local function hold_of(config)
  local hold = config.hold
  if not hold then return nil end
  local at, id = string.match(hold, HOLD_PATTERN)
  return tonumber(at), id ~= '' and id or nil
end
