-- renew (ARGV[2] = ttl ms) or release (ARGV[2] = 0) a host's lease, only if held by ARGV[1].
-- KEYS[1] = "{h:<origin>}:lv" (the lease key is "{h:<origin>}:lease").
local key = P .. ':lease'
if redis.call('GET', key) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) > 0 then redis.call('PEXPIRE', key, ARGV[2]) else redis.call('DEL', key) end
return 1
