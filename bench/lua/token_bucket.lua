-- Token bucket in Redis + Lua: the baseline bench/run measures RL.CHECK ... TOKEN_BUCKET against.
-- Shaped like the seed scripts (HMGET / HSET / PEXPIRE on one hash) but it reads the clock with
-- TIME, so no client clock decides, and it returns the same five fields as RL.CHECK, so both
-- sides do comparable work per call.
-- KEYS[1] = bucket key; ARGV = limit, window_ms, cost. Rate = limit / window, capacity = limit.
-- Reply: {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3]) or 1
local rate = limit / window -- tokens per ms

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or limit
local ts = tonumber(state[2]) or now
-- A clock that went back refills nothing (and never removes tokens).
if now > ts then
  tokens = math.min(limit, tokens + (now - ts) * rate)
  ts = now
end

local allowed, retry = 0, 0
if cost > limit then
  retry = -1 -- can never pass
elseif tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) / rate)
end
local reset = math.ceil((limit - tokens) / rate)

redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', ts)
-- A full bucket is the same as no bucket, so the key may go once it would be full again.
redis.call('PEXPIRE', KEYS[1], math.max(reset, 1))
return {allowed, limit, math.floor(tokens), retry, reset}
