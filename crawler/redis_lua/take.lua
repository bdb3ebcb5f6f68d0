-- take: a pending page's request goes out; it stays taken (owner, time) until acknowledged.
-- ARGV: uid, owner ("crawler|run|time taken").  Returns {url, depth, read 0/1} or false.
local uid = ARGV[1]
local k = pkey(uid)
local v = redis.call('HMGET', k, 'st', 'r', 'f', 'u', 'd')
if v[1] ~= 'q' then return false end
redis.call('ZREM', qkey(num(v[2]), num(v[3])), uid)
redis.call('HSET', k, 'st', 't')
redis.call('HSET', P .. ':t', uid, ARGV[2])
return {v[4], v[5], v[2]}
