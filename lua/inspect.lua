-- inspect: one task's record. Read-only.
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready are used
-- ARGV[1] id
-- Returns: {} when the id is unknown, else { state (R S L D F, or C when quarantined), type, group,
--   priority, attempts, maxAttempts (0 before the first claim), atMs (R ready since, S due at,
--   L lease deadline, D/F finished at, C quarantined at), last error ("" if none; the reason for
--   C), payload ("" once DONE), rank, enqueuedAtMs, stalls (leases that ran out while held), holding
--   ("1": a FAILED task its ordered group waits behind, onFailure hold; else ""), run (the current
--   or last attempt's "<started>,<readySince>", "" before the first), history (the task's "<id>:h": its
--   attempts that ended other than DONE, lib/records.lua), result (DONE: the result its ack kept,
--   JSON text; else ""), progress (what its handler last reported with a heartbeat, JSON text, or ""),
--   trace (the traceparent its body keeps, while it has one; "" when none) }
-- Errors: LEASEQ_BAD_ARGUMENT when the id is malformed, LEASEQ_FORMAT when the queue is in another
--   storage format.
-- Uses: K, guard, inspect_args, load, parse_body, parse_state, require_format, unmarked

return guard('inspect', function()
  local id = inspect_args()
  require_format()
  local values = redis.call('HMGET', K.task, id .. ':s', id, id .. ':x', id .. STALLS, id .. HISTORY, id .. PROGRESS)
  local state_value, body, reason, stalls = values[1], values[2], values[3], tonumber(values[4]) or 0
  local history, progress = values[5] or '', values[6] or ''
  local function priority_of(rank) return math.floor(rank / RANK_SEQ_SPAN) + PRIORITY_MIN end
  local function payload_of(info) return info and string.sub(body, info.payload_at) or '' end
  if reason then
    local quarantined = redis.call('ZSCORE', K.corrupt, id)
    local state = state_value and parse_state(unmarked(state_value)) or nil
    local info = body and parse_body(body) or nil
    return {
      'C', state and state.type or (info and info.type) or '', state and state.group or (info and info.group) or '',
      state and priority_of(state.rank) or 0, state and state.attempts or 0, state and state.max or 0,
      tonumber(quarantined) or 0, reason, payload_of(info), state and state.rank or 0, info and info.enqueued or 0,
      stalls, '', state and state.run or '', history, '', progress, info and info.trace or '',
    }
  end
  if not state_value and not body then return {} end
  local task = load({ id }, true)[id]
  if task.problem then
    return { 'C', '', '', 0, 0, 0, 0, 'unreadable: ' .. task.problem, '', 0, 0, stalls, '', '', history, '', progress, '' }
  end
  local info, state = task.body_info, task.state
  if not state then
    local rank = tonumber(redis.call('ZSCORE', K.ready, id)) or 0
    return {
      'R', info.type, info.group, priority_of(rank), 0, 0, info.enqueued, '', payload_of(info), rank, info.enqueued, stalls, '',
      '', history, '', progress, info.trace,
    }
  end
  body = task.body
  return {
    state.letter, state.type, state.group, priority_of(state.rank), state.attempts, state.max, state.at,
    state.letter ~= 'D' and state.error or '', payload_of(info), state.rank, info and info.enqueued or 0, stalls,
    (state.letter == 'F' and state.group ~= '' and string.find(state.flags, 'h', 1, true)) and '1' or '',
    state.run, history, state.letter == 'D' and state.error or '', progress, info and info.trace or '',
  }
end)
