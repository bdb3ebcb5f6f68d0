-- revive: queue a known page again now: a retried fetch (taken by this run, ARGV[2]) or a
-- dead page (it lives again with no cash); a page read or taken by another run stays as it is.
-- ARGV: uid, owner prefix ("crawler|run|").  Returns {queued 0/1, counts...}
local uid = ARGV[1]
local k = pkey(uid)
local v = redis.call('HMGET', k, 'kn', 'x', 'r', 'f', 'st', 'b', 's')
if v[1] ~= '1' then return {0, unpack(counts())} end
local r, f = num(v[3]), num(v[4])
local b, s = num(v[6]), num(v[7])
if v[2] == '1' then
  local L0, L1, L2 = levels()
  s = offset(r, f, L0, L1, L2)
  b = 0
  redis.call('HSET', k, 'x', '0', 'b', '0', 's', fmt(s))
  redis.call('HINCRBY', LV, 'm0', 1)
  if r == 0 then redis.call('HINCRBY', LV, 'm1', 1) end
  if f == 1 then redis.call('HINCRBY', LV, 'm2', 1) end
  addB(-s)
end
if v[5] == 'q' then return {0, unpack(counts())} end
if v[2] ~= '1' then
  local owner = redis.call('HGET', P .. ':t', uid)
  if v[5] ~= 't' or not owner or string.sub(owner, 1, #ARGV[2]) ~= ARGV[2] then
    return {0, unpack(counts())}
  end
end
if v[5] == 'w' then redis.call('ZREM', P .. ':w', uid) end
redis.call('HDEL', P .. ':t', uid)
redis.call('HSET', k, 'st', 'q')
redis.call('ZADD', qkey(r, f), fmt(b - s), uid)
return {1, unpack(counts())}
