// Upstream's other shape: the submission is a header the harness includes.
#pragma once
#include "submission.cuh"
