/* A plugin built against the ABI 1.4 header (see compat_plugin.h). */
#include "graphpass-1.4.h"
#include "compat_plugin.h"
