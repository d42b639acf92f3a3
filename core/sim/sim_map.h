/*
 * Inside the simulator: a map from 64-bit keys to ints (sim_map.c), for
 * what the simulator looks up by a pair of devices or of a shard and a
 * device, whose dense table would grow as the product of two counts: a
 * cluster of 10,000 devices on one node has 10^8 directed pairs, of
 * which a plan uses a few thousand.  Open addressing with linear
 * probing, at most half full; clearing empties the slots in use only, so
 * a map cleared after each of many small uses costs those uses.
 */
#ifndef AUTOPAR_SIM_MAP_H
#define AUTOPAR_SIM_MAP_H

#include <stddef.h>
#include <stdint.h>

struct sim_map {
	int64_t *key;   /* [cap]: a key, or -1 for an empty slot */
	int *val;       /* [cap] */
	int *used;      /* [n]: the slots in use, in order of insertion */
	size_t cap, n, cap_used;
};

/* The value of key (>= 0), or -1 when it is not in the map. */
int sim_map_get(const struct sim_map *m, int64_t key);
/* Points *val at key's value, inserting key with the value -1 when it is
 * not there; AP_EFAIL (reported) when out of memory.  The pointer is
 * valid until the next insertion. */
int sim_map_at(struct sim_map *m, int64_t key, int **val);
void sim_map_clear(struct sim_map *m);
void sim_map_release(struct sim_map *m);

#endif
