-- load: pending/taken/waiting per host ({g}:load), read every maintenance round; the prelude's
-- check makes it the frontier's identity check of a crawler that holds no host.
-- KEYS[1] = "{g}:lv".  Returns the hash as a flat list.
return redis.call('HGETALL', P .. ':load')
