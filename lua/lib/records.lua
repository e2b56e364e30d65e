-- Records: reading and checking a task's record. Its layout is declared in shared/protocol/record.ts;
-- the patterns (STATE_PATTERN, BODY_PATTERN, ...), the DIGITS_ bounds, state_line, state_text and
-- new_state come from there through lua/lib/protocol.lua.

-- The field after a task's id that counts its stalls (leases that ran out while held, its worker
-- gone): "<id>:t", written by a reclaim, removed with the task (trim, delete) or when it starts
-- again (requeue, repair).
local STALLS = ':t'

-- The field after a task's id that keeps its history (docs/storage.md): the attempts that ended other
-- than DONE (retried, failed, expired, edited), oldest first, the newest `historyAttempts` of them,
-- each a HISTORY_ENTRY (shared/protocol/values.ts: written by history_entry_line, read with
-- HISTORY_ENTRY_PATTERN; started and waited from the state's run field, empty when it had none).
-- Removed with the task (trim, delete).
local HISTORY = ':h'

-- The field after a task's id that keeps the progress its handler last reported with a heartbeat
-- (JSON text; extend writes it), removed with the task (trim, delete).
local PROGRESS = ':p'

-- The first byte of the task hash's own fields (#lease, #v0): ids never start with it.
local OWN_FIELD_BYTE = 35 -- "#"

-- A state text as a table of its fields, each the text it was stored as (attempts, gen, max, at and
-- rank are digits: tonumber where arithmetic needs them), or nil and the reason it cannot be read.
-- Never raises.
local function parse_state(text)
  local letter, attempts, gen, max, at, flags, rank, task_type, group, claim, run, error_at = string.match(text, STATE_PATTERN)
  if not letter then
    -- The layout before the run field (LEGACY_STATE_FIELDS): no attempt's run recorded.
    letter, attempts, gen, max, at, flags, rank, task_type, group, claim, error_at = string.match(text, LEGACY_STATE_PATTERN)
    run = ''
  end
  if not letter then return nil, 'unreadable state record' end
  -- Digits only, so only their length can put them out of range (the DIGITS_ bounds of the record's
  -- declaration: a rank and a generation stay below 2^53).
  if #rank > DIGITS_RANK or #gen > DIGITS_GEN or #at > DIGITS_AT or #attempts > DIGITS_ATTEMPTS or #max > DIGITS_MAX then
    return nil, 'state record with a number out of range'
  end
  return {
    letter = letter, attempts = attempts, gen = gen, max = max, at = at, flags = flags, rank = rank,
    type = task_type, group = group, claim = claim, run = run, error = string.sub(text, error_at),
  }
end

-- `old` (a task's history, or nil) with the attempt `state` ran added, ended at `ended` as `outcome`
-- with `error_text`, keeping the newest `keep` attempts; nil when it keeps none. A history that
-- cannot be read is started again. Never raises.
local function history_add(old, state, ended, outcome, error_text, keep)
  if keep <= 0 then return nil end
  local started, since = string.match(state.run or '', RUN_PATTERN)
  local waited = started and math.max(0, tonumber(started) - tonumber(since))
  local entry = history_entry_line(state.attempts, started or '', waited and fmt(waited) or '', ended, outcome, error_text)
  if not old or old == '' then return entry end
  local starts, at = {}, 1
  while at <= #old do
    local bytes, error_at = string.match(old, HISTORY_ENTRY_PATTERN, at)
    if not bytes then return entry end
    starts[#starts + 1] = at
    at = error_at + tonumber(bytes)
  end
  if at ~= #old + 1 then return entry end
  local drop = #starts + 1 - keep
  if drop <= 0 then return old .. entry end
  if drop >= #starts then return entry end
  return string.sub(old, starts[drop + 1]) .. entry
end

-- A quarantined record's state as it was before it was set aside (the text itself otherwise).
local function unmarked(text)
  if string.sub(text, 1, 2) == QUARANTINED then return string.sub(text, 3) end
  return text
end

local function plus(text, delta)
  return tostring(tonumber(text) + delta)
end

-- A body's trace and where its payload starts, from `after`, the position LEGACY_BODY_PATTERN gives
-- past its group: what follows the group is the payload (the layout without the trace field, what
-- an untraced send writes), or a trace field, empty ("|") or a traceparent ("00-"), read with a
-- second match only then. A payload's JSON never starts with "|" nor with "00-".
local function body_trace(text, after)
  local first = string.byte(text, after)
  if first == 124 then return '', after + 1 end -- "|": an empty trace
  if first == 48 and string.byte(text, after + 1) == 48 and string.byte(text, after + 2) == 45 then
    local _, _, _, trace, at = string.match(text, BODY_PATTERN)
    if trace and #trace == LENGTH_TRACE then return trace, at end
  end
  return '', after
end

-- A body's enqueue time (its text), type, group, trace and the payload's position, of either layout,
-- or nil: one match for the body of an untraced task, a second only for a traced one (body_trace).
local function body_prefix(text)
  local enqueued, task_type, group, payload_at = string.match(text, LEGACY_BODY_PATTERN)
  if not enqueued then return nil end
  local trace, at = body_trace(text, payload_at)
  return enqueued, task_type, group, trace, at
end

-- The prefix of a body: { enqueued, type, group, trace, payload_at }, or nil and why. Never raises;
-- reads only the prefix, however long the payload. A body written before the trace field (the
-- legacy layout: its payload right after the group) is read too, its trace empty: what tells them
-- apart is the field after the group, empty or a traceparent then "|" in the current layout, where
-- the legacy one has the payload's JSON (shared/protocol/record.ts LEGACY_BODY_FIELDS).
local function parse_body(text)
  local enqueued, task_type, group, trace, payload_at = body_prefix(text)
  if not enqueued then return nil, 'unreadable body record' end
  enqueued = tonumber(enqueued)
  if not is_int(enqueued, 0, TIME_MAX_MS) then return nil, 'body record with a time out of range' end
  return { enqueued = enqueued, type = task_type, group = group, trace = trace, payload_at = payload_at }
end

-- The lease token: "<rank>.<gen>", both as stored (no number is printed). The generation of every
-- lease is the queue's lease counter at its claim, so no two leases share a token, even across a
-- delete and a new enqueue of the same id.
local function token_of(state)
  return state.rank .. '.' .. state.gen
end

-- Whether `token` is the state's lease token.
local function token_matches(state, token)
  return token == state.rank .. '.' .. state.gen
end

-- One task's record from its fields as fetched: the state text (nil: READY, never claimed, or
-- not loaded) and the body (nil when absent or not loaded). Returns { state, body, body_info,
-- problem }. Never raises: a record it cannot read gets `problem`, for the caller to
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
      task.problem = 'unreadable record (not of format v2)'
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
-- read_record()'s. A missing state (a READY task never claimed, or none) is looked up in the body.
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

-- What a task's fields say it is: the letter of its state ("R" for a body alone, never claimed;
-- "C" quarantined), or nil when the id is unknown.
local function record_letter(state, body, reason)
  if reason then return 'C' end
  if state then return string.sub(state, 1, 1) end
  if body then return 'R' end
  return nil
end
