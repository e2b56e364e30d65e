-- configure: write the queue's settings into its config, from the declaration of the worker that
-- runs them (at its cold start). Idempotent: a declaration already written (same revision) changes
-- nothing. Fields the scripts keep at run time (nextDue, hold, pauses, wake) are left alone.
-- Deployments may share a queue, each running its own types and accepting the others' (a:<type>):
-- a declaration writes the policies of the types it runs, marks the types it accepts without
-- touching their policies (another deployment's). The per-type fields of a type it neither runs nor
-- accepts are retired, not removed: kept with a mark r:<type> = the time (ms) it was first found
-- missing, and removed by a declaration that meets them TYPE_RETIRE_MS (a day) later. So a worker of
-- the previous version starting after the new one (or the other way round) takes no type's policy
-- away while both may run: a claim leaves the type's tasks READY for a worker that has it. A
-- declaration that runs or accepts the type again drops its mark.
--
-- KEYS the queue's keys (see lib/arguments.lua): config is used
-- ARGV[1] revision   the declaration's digest (the library computes it from the settings below)
-- ARGV[2] now        ms since epoch (when a type is retired, and when its fields go)
-- ARGV[3..] field, value pairs: ordered (0/1), skewMs, doneRetentionMs, failedRetentionMs,
--           maxPayloadBytes, maxErrorBytes, maxStalls (a task is FAILED at its n-th stall), historyAttempts
--           (the ended attempts a task's history keeps), callerClock (1:
--           decisions on the callers' clocks as given, docs/design.md), strictTypes (1: enqueue refuses a type without a
--           policy p:<type>), d ("<leaseMs>,<maxAttempts>", the default policy) and
--           p:<type> ("<leaseMs>,<maxAttempts>") per type it runs, a:<type> ("1") per type it
--           accepts (another deployment runs it), gd and g:<type> (group policies:
--           "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,<typeRateMs>",
--           docs/groups.md), od and o:<type> ("hold": an ordered group waits behind its FAILED task,
--           with gd and g:<type> respectively), n:<type> (the deployment that runs the type, per
--           type it runs) and u:<deployment> (that deployment's wake queue URL); every queue-wide
--           setting not given is removed (its default applies)
-- Writes also `deps`, the deployments that run the queue's types (n:<type>), comma-separated, when
-- there are two or more (docs/wake-ups.md: each keeps its own wake-up marks), else removes it;
-- `leases`, the distinct lease lengths of the queue's policies, its own and the ones it
-- keeps (ms, comma-separated), which a claim reads instead of every policy; and, on a new queue,
-- the format version.
-- Returns: 1 when the config changed, 0 when it was already this revision.
-- Errors: LEASEQ_BAD_ARGUMENT when a field or value is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (every field is checked, and the config read,
--   before the first write).
-- Uses: K, bad, configure_args, configure_item, configure_items, fmt, guard, int_arg, is_int
-- Uses: name_arg, read_config, stamp_format, write_many

local SETTINGS = {
  ordered = { 0, 1 }, skewMs = { 0, SKEW_MAX_MS }, doneRetentionMs = { 0, RETENTION_MAX_MS },
  failedRetentionMs = { 0, RETENTION_MAX_MS }, maxPayloadBytes = { 1, PAYLOAD_MAX_BYTES },
  maxErrorBytes = { 0, ERROR_MAX_BYTES }, strictTypes = { 0, 1 }, maxStalls = { 1, STALLS_MAX },
  historyAttempts = { 0, HISTORY_ATTEMPTS_MAX }, maxResultBytes = { 0, RESULT_MAX_BYTES },
  callerClock = { 0, 1 },
}

-- A group policy: "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,<typeRateMs>".
local function group_policy_arg(field, value)
  local conc, ordered, rate_max, rate_ms, type_max, type_ms = string.match(value, GROUP_POLICY_PATTERN)
  local ok = conc and is_int(tonumber(conc), 0, GROUP_CONCURRENCY_MAX) and (ordered == '0' or conc == '1')
  for _, rate in ipairs({ { rate_max, rate_ms }, { type_max, type_ms } }) do
    if ok then
      local max, span = tonumber(rate[1]), tonumber(rate[2])
      ok = is_int(max, 0, RATE_MAX) and ((max == 0 and span == 0) or (max > 0 and is_int(span, 1, RATE_INTERVAL_MAX_MS)))
    end
  end
  if not ok then
    bad(field .. ' must be "<concurrency 0..' .. GROUP_CONCURRENCY_MAX .. '>,<ordered 0|1 (1 needs concurrency 1)>,' ..
      '<groupRateMax 0..' .. RATE_MAX .. '>,<groupRateMs>,<typeRateMax>,<typeRateMs 1..' .. RATE_INTERVAL_MAX_MS ..
      ' when its max is not 0, else 0>"')
  end
end

local function policy_arg(field, value)
  local lease, max = string.match(value, POLICY_PATTERN)
  if not lease or not is_int(tonumber(lease), 1, LEASE_MAX_MS) or not is_int(tonumber(max), 1, ATTEMPTS_MAX) then
    bad(field .. ' must be "<leaseMs 1..' .. LEASE_MAX_MS .. '>,<maxAttempts 1..' .. ATTEMPTS_MAX .. '>"')
  end
end

return guard('configure', function()
  local revision, now = configure_args()
  if not string.find(revision, '^%x+$') or #revision > 64 then bad('revision must be 1-64 hexadecimal characters') end
  local wanted = {}
  for i = 1, configure_items(4000, 0) do
    local field, value = configure_item(i)
    local range = SETTINGS[field]
    if range then
      int_arg(field, value, range[1], range[2])
    elseif field == 'd' then
      policy_arg(field, value)
    elseif field == 'gd' then
      group_policy_arg(field, value)
    elseif string.sub(field, 1, 2) == 'g:' then
      name_arg('group policy type', string.sub(field, 3), TYPE_MAX_BYTES)
      group_policy_arg(field, value)
    elseif string.sub(field, 1, 2) == 'p:' then
      name_arg('policy type', string.sub(field, 3), TYPE_MAX_BYTES)
      policy_arg(field, value)
    elseif string.sub(field, 1, 2) == 'a:' then
      name_arg('accepted type', string.sub(field, 3), TYPE_MAX_BYTES)
      if value ~= '1' then bad(field .. ' must be "1"') end
    elseif string.sub(field, 1, 2) == 'n:' then
      name_arg('deployment type', string.sub(field, 3), TYPE_MAX_BYTES)
      name_arg(field, value, OWNER_MAX_BYTES)
    elseif string.sub(field, 1, 2) == 'u:' then
      name_arg('wake queue deployment', string.sub(field, 3), OWNER_MAX_BYTES)
      if #value > 1024 or not string.find(value, '^https?://[%w%-%._~:/%%]+$') then
        bad(field .. ' must be a wake queue URL (http(s)://, at most 1024 characters, no spaces or commas)')
      end
    elseif field == 'od' or string.sub(field, 1, 2) == 'o:' then
      if field ~= 'od' then name_arg('onFailure type', string.sub(field, 3), TYPE_MAX_BYTES) end
      if value ~= 'hold' then bad(field .. ' must be "hold" (onFailure of an ordered group)') end
    else
      bad('unknown setting "' .. string.sub(field, 1, 40) .. '"')
    end
    wanted[field] = value
  end
  local current = read_config()
  if current.rev == revision then
    stamp_format(current)
    return 0
  end
  -- The types this declaration runs or accepts; any other is retired (kept a day, then removed).
  local mine = {}
  for field in pairs(wanted) do
    local prefix = string.sub(field, 1, 2)
    if prefix == 'p:' or prefix == 'g:' or prefix == 'a:' or prefix == 'o:' or prefix == 'n:' then
      mine[string.sub(field, 3)] = true
    end
  end
  local stale, kept, retiring = {}, {}, {}
  for field, value in pairs(current) do
    local prefix = string.sub(field, 1, 2)
    if SETTINGS[field] or field == 'd' or field == 'gd' or field == 'od' then
      if wanted[field] == nil then stale[#stale + 1] = field end
    elseif prefix == 'p:' or prefix == 'g:' or prefix == 'a:' or prefix == 'r:' or prefix == 'o:' or prefix == 'n:' then
      local task_type = string.sub(field, 3)
      if not mine[task_type] then
        local retired = tonumber(current['r:' .. task_type])
        if retired and retired + TYPE_RETIRE_MS <= now then
          stale[#stale + 1] = field
        elseif prefix ~= 'r:' then
          kept[field] = value
          if not retired then retiring[task_type] = true end
        end
      elseif prefix == 'r:' then
        stale[#stale + 1] = field -- run or accepted again
      elseif wanted['a:' .. task_type] and prefix ~= 'a:' then
        kept[field] = value -- another deployment's policy of a type this one accepts
      elseif wanted[field] == nil then
        stale[#stale + 1] = field
      end
    end
  end
  write_many('HDEL', K.config, stale)
  local fields = { 'rev', revision }
  for task_type in pairs(retiring) do
    fields[#fields + 1] = 'r:' .. task_type
    fields[#fields + 1] = fmt(now)
  end
  local leases, distinct = {}, {}
  if not wanted.d then distinct[DEFAULT_LEASE_MS] = true end -- the types without a policy of their own
  for _, set in ipairs({ wanted, kept }) do
    for field, value in pairs(set) do
      if set == wanted then
        fields[#fields + 1] = field
        fields[#fields + 1] = value
      end
      if field == 'd' or string.sub(field, 1, 2) == 'p:' then distinct[tonumber(string.match(value, '^%d+'))] = true end
    end
  end
  for lease in pairs(distinct) do leases[#leases + 1] = lease end
  table.sort(leases)
  fields[#fields + 1] = 'leases'
  fields[#fields + 1] = table.concat(leases, ',')
  -- The deployments running the queue's types: this declaration's and the ones kept.
  local deps, named = {}, {}
  for _, set in ipairs({ wanted, kept }) do
    for field, value in pairs(set) do
      if string.sub(field, 1, 2) == 'n:' and not named[value] then
        named[value] = true
        deps[#deps + 1] = value
      end
    end
  end
  table.sort(deps)
  if #deps >= 2 then
    fields[#fields + 1] = 'deps'
    fields[#fields + 1] = table.concat(deps, ',')
  elseif current.deps then
    redis.call('HDEL', K.config, 'deps')
  end
  write_many('HSET', K.config, fields, 2)
  stamp_format(current)
  return 1
end)
