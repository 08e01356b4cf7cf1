/*
 * wave_v3.h: the two v3 message kinds as sources: the columns a wave scan
 * returns (in output order) and the indexes it reads. Shared by the wave
 * scans (wave_v3.c) and the ceilings (ceilings.c).
 */
#ifndef XIP83_WAVE_V3_H
#define XIP83_WAVE_V3_H

#include "source.h"

/* Positions of the columns every v3 kind shares, in SourceSpec.columns. */
#define V3_COL_ID		0
#define V3_COL_TOPIC	2

extern const SourceSpec WaveV3GroupSource;
extern const SourceSpec WaveV3WelcomeSource;

#endif							/* XIP83_WAVE_V3_H */
