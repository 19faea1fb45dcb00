/* placeholder: implemented by its owner */
#include "kb_signal.h"
