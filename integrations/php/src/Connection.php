<?php
// One connection to rl (rl-server, or Redis with rl.so) over phpredis or Predis: sends one command
// and returns the server's RESP2 reply. The two failures a caller must tell apart are two
// exception types: the limiter could not be asked (LimiterUnavailableException: refused, reset,
// no reply within the client's timeout) and the limiter answered with an error reply
// (CommandErrorException: the request is wrong, whatever the failure mode says).

namespace Rl\RateLimiter;

final class Connection
{
    /** @var \Redis|\Predis\ClientInterface */
    private $client;

    /**
     * @param \Redis|\Predis\ClientInterface $client connected with the timeout the caller wants
     *        (tens of ms: a hung limiter must not hold every request)
     */
    public function __construct($client)
    {
        if (!$client instanceof \Redis && !$client instanceof \Predis\ClientInterface) {
            throw new \InvalidArgumentException('expected a \Redis (phpredis) or a \Predis\ClientInterface');
        }
        $this->client = $client;
    }

    /** @param \Redis|\Predis\ClientInterface|self $client */
    public static function of($client): self
    {
        return $client instanceof self ? $client : new self($client);
    }

    /**
     * @param list<string> $args the command and its arguments
     *
     * @return mixed the reply as the client library hands it (RESP2: arrays and integers)
     */
    public function call(array $args)
    {
        if ($this->client instanceof \Redis) {
            try {
                $this->client->clearLastError();
                $reply = $this->client->rawCommand(...$args);
            } catch (\RedisException $e) {
                throw new LimiterUnavailableException($e->getMessage(), 0, $e);
            }
            if ($reply === false && $this->client->getLastError() !== null) {
                throw new CommandErrorException($this->client->getLastError());
            }

            return $reply;
        }
        try {
            $error = false;
            $reply = $this->client->executeRaw($args, $error);
        } catch (\Predis\PredisException $e) {
            throw new LimiterUnavailableException($e->getMessage(), 0, $e);
        }
        if ($error) {
            throw new CommandErrorException((string) $reply);
        }

        return $reply;
    }
}
