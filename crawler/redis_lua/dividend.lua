-- a dividend of the virtual page to this host's classes (section 3.3), O(1): raise the class
-- levels.  A class with no page here passes its part to every live page; a host with no live
-- page sends it back to the virtual page.  ARGV: transfer ID, now, seconds to remember the ID,
-- to every live, to unread, to focus.  Returns 1 applied, 2 sent back, 0 applied before.
if applied_before(ARGV[1], ARGV[2], ARGV[3]) then return 0 end
local m = redis.call('HMGET', LV, 'm0', 'm1', 'm2')
local m0, m1, m2 = num(m[1]), num(m[2]), num(m[3])
local all, unread, focus = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if m1 > 0 then redis.call('HINCRBYFLOAT', LV, 'L1', fmt(unread / m1)) else all = all + unread end
if m2 > 0 then redis.call('HINCRBYFLOAT', LV, 'L2', fmt(focus / m2)) else all = all + focus end
if m0 > 0 then redis.call('HINCRBYFLOAT', LV, 'L0', fmt(all / m0)) else
  send('', 0, all)
  return 2
end
return 1
