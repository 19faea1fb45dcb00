/* placeholder: implemented by its owner */
#include "kb_redis.h"
