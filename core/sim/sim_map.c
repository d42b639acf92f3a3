/*
 * The simulator's map from 64-bit keys to ints (sim_map.h).
 */
#include "sim/sim_map.h"

#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/grow.h"

static size_t slot_of(const struct sim_map *m, int64_t key)
{
	/* Fibonacci hashing: keys are products of small counts plus an
	 * index, whose low bits alone would cluster */
	return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (m->cap - 1);
}

int sim_map_get(const struct sim_map *m, int64_t key)
{
	if (!m->cap)
		return -1;
	for (size_t h = slot_of(m, key);; h = (h + 1) & (m->cap - 1)) {
		if (m->key[h] == key)
			return m->val[h];
		if (m->key[h] < 0)
			return -1;
	}
}

/* Twice the capacity, the keys in use placed again in their order. */
static int rehash(struct sim_map *m)
{
	size_t cap = m->cap ? 2 * m->cap : 64;
	int64_t *key = malloc(cap * sizeof *key), *okey = m->key;
	int *val = malloc(cap * sizeof *val), *oval = m->val;

	if (!key || !val) {
		free(key);
		free(val);
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	}
	memset(key, 0xff, cap * sizeof *key);
	m->key = key;
	m->val = val;
	m->cap = cap;
	for (size_t i = 0; i < m->n; i++) {
		size_t h, o = (size_t)m->used[i];

		for (h = slot_of(m, okey[o]); key[h] >= 0; h = (h + 1) & (cap - 1))
			;
		key[h] = okey[o];
		val[h] = oval[o];
		m->used[i] = (int)h;
	}
	free(okey);
	free(oval);
	return AP_OK;
}

int sim_map_at(struct sim_map *m, int64_t key, int **val)
{
	size_t h;

	if (2 * (m->n + 1) > m->cap && rehash(m))
		return AP_EFAIL;
	for (h = slot_of(m, key); m->key[h] >= 0; h = (h + 1) & (m->cap - 1))
		if (m->key[h] == key) {
			*val = &m->val[h];
			return AP_OK;
		}
	if (reserve(&m->used, &m->cap_used, m->n + 1, sizeof *m->used))
		return ap_err(AP_EFAIL, NULL, 0, "simulator: out of memory");
	m->key[h] = key;
	m->val[h] = -1;
	m->used[m->n++] = (int)h;
	*val = &m->val[h];
	return AP_OK;
}

void sim_map_clear(struct sim_map *m)
{
	for (size_t i = 0; i < m->n; i++)
		m->key[m->used[i]] = -1;
	m->n = 0;
}

void sim_map_release(struct sim_map *m)
{
	free(m->key);
	free(m->val);
	free(m->used);
	memset(m, 0, sizeof *m);
}
