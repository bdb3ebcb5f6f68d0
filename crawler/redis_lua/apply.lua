-- apply a money transfer to a page of this host, once (the transfer ID is remembered until the
-- source's outbox forgets it).  A page that is dead or unknown here passes it to the virtual
-- page.  ARGV: transfer ID, uid, amount.  Returns 1 applied, 0 applied before.
if redis.call('SISMEMBER', P .. ':ap', ARGV[1]) == 1 then return 0 end
redis.call('SADD', P .. ':ap', ARGV[1])
local k = pkey(ARGV[2])
local a = tonumber(ARGV[3])
local v = redis.call('HMGET', k, 'kn', 'x', 'b', 's', 'st', 'r', 'f')
if v[1] == '1' and v[2] ~= '1' then
  local b = num(v[3]) + a
  redis.call('HSET', k, 'b', fmt(b))
  addB(a)
  if v[5] == 'q' then redis.call('ZADD', qkey(num(v[6]), num(v[7])), fmt(b - num(v[4])), ARGV[2]) end
else
  send('', 0, a)
end
return 1
