-- naive-claim: the claim of the naive sorted-set queue (the ZPOPMIN article), for comparison only.
-- It moves up to `count` tasks from the queue to the processing set and returns their payloads.
-- Nothing fences the ack that follows: it is a plain MULTI ZREM processing; SADD done per task.
--
-- KEYS[1] queue zset        id scored by priority * 2^42 + arrival
-- KEYS[2] processing zset   id scored by claim time (ms)
-- KEYS[3] payload hash      id -> payload (JSON text)
-- ARGV[1] count             the most tasks to pop
-- ARGV[2] now               ms since epoch
-- Returns: per task, 2 each: id, payload. An empty array when the queue is empty.
local popped = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
if #popped == 0 then return {} end
local ids, processing = {}, {}
for i = 1, #popped, 2 do
  ids[#ids + 1] = popped[i]
  processing[#processing + 1] = ARGV[2]
  processing[#processing + 1] = popped[i]
end
redis.call('ZADD', KEYS[2], unpack(processing))
local payloads = redis.call('HMGET', KEYS[3], unpack(ids))
local result = {}
for i, id in ipairs(ids) do
  result[#result + 1] = id
  result[#result + 1] = payloads[i]
end
return result
