/* A plugin built against the ABI 1.2 header (see compat_plugin.h). */
#include "graphpass-1.2.h"
#include "compat_plugin.h"
