/* placeholder: implemented by its owner */
#include "kb_kafka.h"
