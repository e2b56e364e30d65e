-- Rates (docs/groups.md "Rates"): a group's claims per window, and a type's across its groups,
-- counted in the lane's (or the type's) record: window and count.

-- The time rate windows are decided at: a caller's now, never past the store's clock plus the skew
-- the queue allows (decision_bound, read once per script: one HMGET and TIME, only where a rate is
-- set), so a caller whose clock runs ahead opens no window early and lets no task out before its
-- rate allows. A queue that trusts its callers' clocks (callerClock) takes now as given.
local rate_bound = nil
local function rate_time(now)
  if rate_bound == nil then rate_bound = decision_bound(read_config_fields({ 'callerClock', 'skewMs' })) or false end
  return rate_bound and math.min(now, rate_bound) or now
end

-- The window a claim at `now` counts in: now's window, or a later one a caller with a clock ahead
-- opened already (a window never moves backwards, so clocks that disagree cannot reopen one).
local function rate_window(record, span, now)
  now = rate_time(now)
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
