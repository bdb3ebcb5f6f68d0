-- a dividend of the virtual page to this host's classes (section 3.3), O(1): raise the class
-- levels.  A class with no page here passes its part to every live page; a host with no live
-- page sends it back to the virtual page.  ARGV: transfer ID, to every live, to unread, to focus.
if redis.call('SISMEMBER', P .. ':ap', ARGV[1]) == 1 then return 0 end
redis.call('SADD', P .. ':ap', ARGV[1])
local m = redis.call('HMGET', LV, 'm0', 'm1', 'm2')
local m0, m1, m2 = num(m[1]), num(m[2]), num(m[3])
local all, unread, focus = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if m1 > 0 then redis.call('HINCRBYFLOAT', LV, 'L1', fmt(unread / m1)) else all = all + unread end
if m2 > 0 then redis.call('HINCRBYFLOAT', LV, 'L2', fmt(focus / m2)) else all = all + focus end
if m0 > 0 then redis.call('HINCRBYFLOAT', LV, 'L0', fmt(all / m0)) else send('', 0, all) end
return 1
