<?php
// Which limiter guards which route, and what happens when the limiter cannot be asked: a global
// default with overrides per route (a route mapped to null has no limit).

namespace Rl\RateLimiter\EventSubscriber;


final class PolicyRegistry
{
    /** @var array<string, RoutePolicy|null> */
    private $routes;
    /** @var RoutePolicy|null */
    private $default;

    /**
     * @param array<string, RoutePolicy|null> $routes  route name => its policy (null: unlimited)
     * @param RoutePolicy|null                $default for every other route (null: unlimited)
     */
    public function __construct(array $routes, ?RoutePolicy $default = null)
    {
        $this->routes = $routes;
        $this->default = $default;
    }

    public function forRoute(?string $route): ?RoutePolicy
    {
        if ($route !== null && \array_key_exists($route, $this->routes)) {
            return $this->routes[$route];
        }

        return $this->default;
    }
}
