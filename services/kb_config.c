/* placeholder: implemented by its owner */
#include "kb_config.h"
