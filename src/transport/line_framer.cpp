#include "transport/line_framer.h"
