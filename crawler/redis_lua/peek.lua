-- peek: admit refreshes that came due, then the richest pending page of the host.
-- ARGV: now.  Returns {uid or '', cash, counts...}
local due = redis.call('ZRANGEBYSCORE', P .. ':w', '-inf', ARGV[1], 'LIMIT', 0, 256)
for _, uid in ipairs(due) do
  redis.call('ZREM', P .. ':w', uid)
  local k = pkey(uid)
  local v = redis.call('HMGET', k, 'b', 's', 'r', 'f', 'st')
  if v[5] == 'w' then
    redis.call('ZADD', qkey(num(v[3]), num(v[4])), fmt(num(v[1]) - num(v[2])), uid)
    redis.call('HSET', k, 'st', 'q')
  end
end
local L0, L1, L2 = levels()
local best, bestc = '', 0
for kd = 0, 3 do
  local top = redis.call('ZREVRANGE', P .. ':q:' .. kd, 0, 0, 'WITHSCORES')
  if top[1] then
    local c = num(top[2]) + offset(kd >= 2 and 1 or 0, kd % 2, L0, L1, L2)
    if best == '' or c > bestc then best, bestc = top[1], c end
  end
end
return {best, fmt(bestc), unpack(counts())}
