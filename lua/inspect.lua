-- inspect: one task's record. Read-only.
--
-- KEYS[1] task hash
-- ARGV[1] id
-- Returns: {} when the id is unknown, else { state (R S L D F), type, priority, attempts,
--   maxAttempts (0 before the first claim), atMs (R ready since, S due at, L lease deadline,
--   D/F finished at), last error ("" if none), payload ("" once DONE), rank }
-- Errors: LEASEQ_BAD_ARGUMENT when the id is malformed.
return guard('inspect', function()
  local id = name_arg('id', ARGV[1], ID_MAX_BYTES)
  local record = redis.call('HGET', KEYS[1], id)
  if not record then return {} end
  local task = parse(record)
  return {
    task.state, task.type, math.floor(task.rank / RANK_SEQ_SPAN) + PRIORITY_MIN, task.attempts,
    task.max_attempts, task.at, task.error, payload_of(task), task.rank,
  }
end)
