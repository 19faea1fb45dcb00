/* placeholder: implemented by its owner */
#include "kb_task.h"
