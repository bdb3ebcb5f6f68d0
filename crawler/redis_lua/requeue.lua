-- requeue: taken pages whose owner is gone go back to pending, run by the host's lease holder
-- (a page is taken only under the host's lease, so a page taken by another run was taken by a
-- holder whose lease expired: dead, or cut off for longer than the lease).
-- ARGV: this run's owner prefix ("crawler|run|"), this crawler's prefix ("crawler|").
-- Pages taken by an earlier run of this same crawler are returned, not requeued: its shard
-- may have stored them (the caller acknowledges those, requeues the rest).
local t = redis.call('HGETALL', P .. ':t')
local mine_before = {}
local n = 0
for i = 1, #t, 2 do
  local uid, owner = t[i], t[i + 1]
  if string.sub(owner, 1, #ARGV[1]) ~= ARGV[1] then
    if string.sub(owner, 1, #ARGV[2]) == ARGV[2] then
      mine_before[#mine_before + 1] = uid
    else
      redis.call('HDEL', P .. ':t', uid)
      local k = pkey(uid)
      local v = redis.call('HMGET', k, 'st', 'r', 'f', 'b', 's')
      if v[1] == 't' then
        redis.call('HSET', k, 'st', 'q')
        redis.call('ZADD', qkey(num(v[2]), num(v[3])), fmt(num(v[4]) - num(v[5])), uid)
        n = n + 1
      end
    end
  end
end
return {n, mine_before}
