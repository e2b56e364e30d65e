-- amend: give one FAILED task a new payload and send it back to READY, as requeue does (rank kept,
-- fresh attempts; a task its ordered group waits behind runs first). Its body keeps its enqueue time,
-- type and group; only the payload after them is replaced. The change is kept in its history: an
-- entry with outcome "edited" and the note as its text (who changed it and how: the dashboard
-- writes "payload edited in the dashboard: <old> -> <new> bytes").
--
-- KEYS the queue's keys (see lib/arguments.lua): all of them
-- ARGV[1] now      ms since epoch
-- ARGV[2] id
-- ARGV[3] payload  the new payload's JSON text (the library checks it is JSON), at most the queue's
--                  maxPayloadBytes
-- ARGV[4] note     0..200 bytes: who and why, for the history
-- Returns: { status }: 0 ok, 3 unknown id, 4 not failed (nothing changed), 6 corrupt (set aside)
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed or the payload is over the cap,
--   LEASEQ_FORMAT when the queue is in another storage format; nothing is written then: the
--   arguments, the config and the record are read and checked before the first write.
-- Uses: K, after_quarantine, amend_args, apply, bad, config_int, guard, history_add, hold_of, lanes_flush
-- Uses: load, new_writes, presence_status, put, quarantine, read_config_fields, requeue_failed

return guard('amend', function()
  local now, now_text, id, payload, note = amend_args()
  if #note > 200 then bad('note must be at most 200 bytes, got ' .. #note) end
  local config = read_config_fields({ 'hold', 'fair', 'maxPayloadBytes', 'historyAttempts' })
  local max_payload = config_int(config, 'maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES)
  if #payload > max_payload then bad('payload is ' .. #payload .. ' bytes; the cap is ' .. max_payload) end
  local task = load({ id }, true)[id]
  local status = presence_status(task)
  if status == 6 then
    local writes = new_writes()
    quarantine(writes, id, task.problem, now)
    after_quarantine(id, task, config)
    apply(writes)
    return { 6 }
  end
  local state, info = task.state, task.body_info
  if status ~= nil or not state or state.letter ~= 'F' or not info then return { status == 3 and 3 or 4 } end
  local old = redis.call('HGET', K.task, id .. HISTORY)
  local writes = new_writes()
  put(writes, id, string.sub(task.body, 1, info.payload_at - 1) .. payload)
  local keep = config_int(config, 'historyAttempts', DEFAULT_HISTORY_ATTEMPTS)
  if keep > 0 then
    put(writes, id .. HISTORY, history_add(old or '', { attempts = state.attempts, run = '' }, now_text, 'edited', note, keep))
  end
  requeue_failed(writes, id, state, config, now, now_text)
  apply(writes)
  local _, held = hold_of(config)
  if held == id then redis.call('HDEL', K.config, 'hold') end
  lanes_flush(now)
  return { 0 }
end)
