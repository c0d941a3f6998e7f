<?php
// The limiter answered with an error reply (the server's text, e.g. "ERR window '60' needs a
// unit: 60s, 1m, 250ms"): the request is wrong, which no failure mode should hide.

namespace Rl\RateLimiter;

final class CommandErrorException extends \LogicException
{
}
