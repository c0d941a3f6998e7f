// Placeholder until the writer lands (issue 3).
#include "resp/writer.h"
