/*
 * Growing arrays: one helper for the "double the capacity when full"
 * pattern every reader and table uses.
 */
#ifndef AUTOPAR_GROW_H
#define AUTOPAR_GROW_H

#include <stdlib.h>
#include <string.h>

/* Makes room for element n of the array whose pointer is at *arrp (any
 * element type, elem bytes each), doubling *cap from `first`.  Returns 0,
 * or -1 when out of memory, leaving the array as it was. */
static inline int grow(void *arrp, int n, int *cap, size_t elem, int first)
{
	void *old, *v;
	int c;

	if (n < *cap)
		return 0;
	c = *cap ? 2 * *cap : first;
	memcpy(&old, arrp, sizeof old);
	v = realloc(old, (size_t)c * elem);
	if (!v)
		return -1;
	memcpy(arrp, &v, sizeof v);
	*cap = c;
	return 0;
}

#endif
