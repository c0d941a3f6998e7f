<?php
// A route's limiter and its failure mode: fail-open (the limiter is a guard against overuse: an
// outage of it must not become an outage of the API) or fail-closed (the limiter is a security
// control: login attempts, password resets, expensive exports).

namespace Rl\RateLimiter\EventSubscriber;

use Rl\RateLimiter\RlRateLimiterFactory;

final class RoutePolicy
{
    /** @var RlRateLimiterFactory */
    private $factory;
    /** @var bool */
    private $failOpen;

    public function __construct(RlRateLimiterFactory $factory, bool $failOpen)
    {
        $this->factory = $factory;
        $this->failOpen = $failOpen;
    }

    public function factory(): RlRateLimiterFactory
    {
        return $this->factory;
    }

    public function failOpen(): bool
    {
        return $this->failOpen;
    }
}
