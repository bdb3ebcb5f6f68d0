-- take: a pending page's request goes out; it stays taken (owner, time) until acknowledged.
-- ARGV: uid, owner ("crawler|run|time taken"), the caller's lease value ("crawler|run").
-- Only the host's lease holder takes (requeue.lua counts on it): a caller whose lease lapsed
-- gets -1 and takes nothing.  Returns {url, depth, read 0/1}, false (not pending) or -1.
if redis.call('GET', P .. ':lease') ~= ARGV[3] then return -1 end
local uid = ARGV[1]
local k = pkey(uid)
local v = redis.call('HMGET', k, 'st', 'r', 'f', 'u', 'd')
if v[1] ~= 'q' then return false end
redis.call('ZREM', qkey(num(v[2]), num(v[3])), uid)
redis.call('HSET', k, 'st', 't')
redis.call('HSET', P .. ':t', uid, ARGV[2])
return {v[4], v[5], v[2]}
