<?php
// The limiter could not be asked (connection refused or reset, no reply within the client's
// timeout): the caller decides by its failure mode (fail-open or fail-closed).

namespace Rl\RateLimiter;

final class LimiterUnavailableException extends \RuntimeException
{
}
