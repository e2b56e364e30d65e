-- Variadic commands. Redis's Lua refuses to unpack about 8,000 values (its C stack), so every
-- variadic command of the scripts goes through these two, which send a longer list in slices of at
-- most VARIADIC_MAX values (a whole number of `stride`s: 2 for field-value pairs). They hold the
-- only unpacks in lua/ (test/shared/lua-bounds.test.ts).

-- A reading command (HMGET, ZMSCORE) of `names`: its replies, in order, as one list.
local function read_many(command, key, names)
  local n = #names
  if n == 0 then return {} end
  if n <= VARIADIC_MAX then return redis.call(command, key, unpack(names, 1, n)) end
  local replies = {}
  for first = 1, n, VARIADIC_MAX do
    local reply = redis.call(command, key, unpack(names, first, math.min(n, first + VARIADIC_MAX - 1)))
    for i = 1, #reply do replies[#replies + 1] = reply[i] end
  end
  return replies
end

-- A writing command (HSET, HDEL, ZADD, ZREM, UNLINK) of `values`; nothing when there are none.
-- Returns the sum of its replies (what HDEL, ZREM and UNLINK count).
local function write_many(command, key, values, stride)
  local n = #values
  if n == 0 then return 0 end
  local size = VARIADIC_MAX - VARIADIC_MAX % (stride or 1)
  local total = 0
  for first = 1, n, size do
    total = total + redis.call(command, key, unpack(values, first, math.min(n, first + size - 1)))
  end
  return total
end
