/* A plugin built against the ABI 1.1 header (see compat_plugin.h). */
#include "graphpass-1.1.h"
#include "compat_plugin.h"
