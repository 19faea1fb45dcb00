/* placeholder: implemented by its owner */
#include "kb_log.h"
