-- configure: write the queue's settings into its config, from the one declaration that owns them
-- (the worker's, at its cold start). Idempotent: a declaration already written (same revision)
-- changes nothing. Fields the scripts keep at run time (nextDue, hold, pauses) are left alone.
--
-- KEYS the queue's keys (see _lib.lua): config is used
-- ARGV[1] revision   the declaration's digest (the library computes it from the settings below)
-- ARGV[2..] field, value pairs: ordered (0/1), skewMs, doneRetentionMs, failedRetentionMs,
--           maxPayloadBytes, maxErrorBytes, strictTypes (1: enqueue refuses a type without a
--           policy p:<type>), d ("<leaseMs>,<maxAttempts>", the default policy) and
--           p:<type> ("<leaseMs>,<maxAttempts>") per type, gd and g:<type> (group policies:
--           "<concurrency>,<ordered>,<groupRateMax>,<groupRateMs>,<typeRateMax>,<typeRateMs>",
--           docs/groups.md); every setting not given is removed
--           (its default applies)
-- Writes also `leases`, the distinct lease lengths of the policies (ms, comma-separated), which a
-- claim reads instead of every policy.
-- Returns: 1 when the config changed, 0 when it was already this revision.
-- Errors: LEASEQ_BAD_ARGUMENT when a field or value is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then.
local SETTINGS = {
  ordered = { 0, 1 }, skewMs = { 0, SKEW_MAX_MS }, doneRetentionMs = { 0, RETENTION_MAX_MS },
  failedRetentionMs = { 0, RETENTION_MAX_MS }, maxPayloadBytes = { 1, PAYLOAD_MAX_BYTES },
  maxErrorBytes = { 0, ERROR_MAX_BYTES }, strictTypes = { 0, 1 },
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
  local lease, max = string.match(value, '^(%d+),(%d+)$')
  if not lease or not is_int(tonumber(lease), 1, LEASE_MAX_MS) or not is_int(tonumber(max), 1, ATTEMPTS_MAX) then
    bad(field .. ' must be "<leaseMs 1..' .. LEASE_MAX_MS .. '>,<maxAttempts 1..' .. ATTEMPTS_MAX .. '>"')
  end
end

return guard('configure', function()
  local revision = ARGV[1]
  if type(revision) ~= 'string' or not string.find(revision, '^%x+$') or #revision > 64 then
    bad('revision must be 1-64 hexadecimal characters')
  end
  local wanted = {}
  for i = 1, groups(2, 2, 2000, 0) do
    local field, value = ARGV[2 * i], ARGV[2 * i + 1]
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
    else
      bad('unknown setting "' .. string.sub(field, 1, 40) .. '"')
    end
    wanted[field] = value
  end
  local current = read_config()
  if current.rev == revision then return 0 end
  local stale = {}
  for field in pairs(current) do
    local prefix = string.sub(field, 1, 2)
    if (SETTINGS[field] or field == 'd' or field == 'gd' or prefix == 'p:' or prefix == 'g:') and wanted[field] == nil then
      stale[#stale + 1] = field
    end
  end
  if #stale > 0 then redis.call('HDEL', K.config, unpack(stale)) end
  local fields = { 'v', FORMAT_VERSION, 'rev', revision }
  local leases, distinct = {}, {}
  if not wanted.d then distinct[DEFAULT_LEASE_MS] = true end -- the types without a policy of their own
  for field, value in pairs(wanted) do
    fields[#fields + 1] = field
    fields[#fields + 1] = value
    if field == 'd' or string.sub(field, 1, 2) == 'p:' then distinct[tonumber(string.match(value, '^%d+'))] = true end
  end
  for lease in pairs(distinct) do leases[#leases + 1] = lease end
  table.sort(leases)
  fields[#fields + 1] = 'leases'
  fields[#fields + 1] = table.concat(leases, ',')
  redis.call('HSET', K.config, unpack(fields))
  return 1
end)
