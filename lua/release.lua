-- release: give back leased tasks that were never started, without using an attempt (one whose lease
-- its holder confirmed, flag r, keeps it: its handler had started).
--
-- KEYS the queue's keys (see lib/arguments.lua): task, config, ready, leased, corrupt (and for a task of a
--   group grouped, groups, groupwait) are used
-- ARGV[1] now   ms since epoch
-- ARGV[2..] per item, 2 each: id, token
-- Returns: per item, 1 each: status 0 ok (back to READY with its rank, attempt given back, token
--   revoked), 1 stale token, 2 already done, 3 unknown id, 6 corrupt (its record cannot be read: set
--   aside in corrupt, as settle does). The next claim issues a new token.
-- Errors: LEASEQ_BAD_ARGUMENT when any argument is malformed, LEASEQ_FORMAT when the queue is in
--   another storage format; nothing is written then (both are checked before the first write).
-- Uses: K, apply, fenced_presence, guard, id_arg, lanes_flush, load, make_ready, new_writes, plus
-- Uses: release_args, release_item, release_items, require_format, token_matches, zrem

return guard('release', function()
  local now, now_text = release_args()
  local items, ids = {}, {}
  for i = 1, release_items(BATCH_MAX) do
    local id, token = release_item(i)
    items[i] = { id = id_arg('item ' .. i .. ' id', id), token = token }
    ids[i] = items[i].id
  end
  require_format()

  local tasks = load(ids, false)
  local result, writes, config = {}, new_writes(), {}
  for _, item in ipairs(items) do
    local task = tasks[item.id]
    local state = task.state
    local status = 0
    local present = fenced_presence(writes, item.id, task, config, now)
    if present then
      status = present
    elseif state.letter ~= 'L' or not token_matches(state, item.token) then
      status = 1
    else
      -- The attempt is given back (unless its holder confirmed the lease: its handler ran); the lease
      -- generation moves on, so the token is stale from now.
      if not string.find(state.flags, 'r', 1, true) then state.attempts = plus(state.attempts, -1) end
      state.letter, state.at, state.claim, state.flags = 'R', now_text, '', ''
      state.gen = plus(state.gen, 1)
      make_ready(writes, item.id, state, config, now, true) -- a task of a group: first in it again
      zrem(writes, K.leased, item.id)
    end
    result[#result + 1] = status
  end
  apply(writes)
  lanes_flush(now)
  return result
end)
