-- Leaky bucket (as a queue with constant outflow) in Redis + Lua: the baseline bench/run measures
-- RL.CHECK ... LEAKY_BUCKET against. Not one of the seed scripts; written the same way as
-- token_bucket.lua (one hash, HMGET / HSET / PEXPIRE, clock from TIME). An allowed call gets the
-- delay before it may proceed (the queue ahead of it); only a full queue is denied.
-- KEYS[1] = bucket key; ARGV = limit, window_ms, cost. Outflow = limit / window, queue = limit.
-- Reply: {allowed, limit, remaining, retry_after_ms (delay when allowed), reset_after_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3]) or 1
local rate = limit / window -- units drained per ms

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local state = redis.call('HMGET', KEYS[1], 'level', 'ts')
local level = tonumber(state[1]) or 0
local ts = tonumber(state[2]) or now
if now > ts then
  level = math.max(0, level - (now - ts) * rate)
  ts = now
end

local allowed, wait = 0, 0
if cost > limit then
  wait = -1
elseif level + cost <= limit then
  wait = math.ceil(level / rate) -- the queue ahead drains first
  level = level + cost
  allowed = 1
else
  wait = math.ceil((level + cost - limit) / rate)
end
local reset = math.ceil(level / rate)

if allowed == 1 then
  redis.call('HSET', KEYS[1], 'level', level, 'ts', ts)
  redis.call('PEXPIRE', KEYS[1], math.max(reset, 1))
end
return {allowed, limit, math.floor(limit - level), wait, reset}
