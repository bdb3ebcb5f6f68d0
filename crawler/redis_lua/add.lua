-- add: a URL enters OPIC and its host's unread queue with no cash (known pages stay as they are)
-- ARGV: uid, url, depth, focus (0/1).  Returns {added 0/1, counts...}
-- A host met for the first time gets the frontier's ID (checked by every later script).
if not HAVE then redis.call('HSET', LV, 'fid', FID) end
local uid = ARGV[1]
local k = pkey(uid)
if redis.call('HGET', k, 'kn') == '1' then return {0, unpack(counts())} end
local f = tonumber(ARGV[4])
local L0, L1, L2 = levels()
local s = offset(0, f, L0, L1, L2)
redis.call('HSET', k, 'u', ARGV[2], 'd', ARGV[3], 'b', '0', 's', fmt(s), 'r', '0', 'x', '0',
  'f', f, 'st', 'q', 'fc', '0', 'cc', '0', 'hi', '0', 'kn', '1')
redis.call('ZADD', qkey(0, f), fmt(-s), uid)
redis.call('HINCRBY', LV, 'm0', 1)
redis.call('HINCRBY', LV, 'm1', 1)
if f == 1 then redis.call('HINCRBY', LV, 'm2', 1) end
addB(-s)
return {1, unpack(counts())}
