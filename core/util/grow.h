/*
 * Growing arrays: one helper for the "double the capacity when full"
 * pattern every reader, table and the simulator's buffers use.
 */
#ifndef AUTOPAR_GROW_H
#define AUTOPAR_GROW_H

#include <stdlib.h>
#include <string.h>

/* Makes the array whose pointer is at *arrp (any element type, elem bytes
 * each) hold at least n elements, at least doubling *cap.  Returns 0, or
 * -1 when out of memory, leaving the array as it was. */
static inline int reserve(void *arrp, size_t *cap, size_t n, size_t elem)
{
	void *old, *v;
	size_t want;

	if (n <= *cap)
		return 0;
	want = 2 * *cap > n ? 2 * *cap : n;
	memcpy(&old, arrp, sizeof old);
	v = realloc(old, want * elem);
	if (!v)
		return -1;
	memcpy(arrp, &v, sizeof v);
	*cap = want;
	return 0;
}

/* Makes room for element n of an array with an int capacity, starting at
 * `first` elements. */
static inline int grow(void *arrp, int n, int *cap, size_t elem, int first)
{
	size_t c = (size_t)*cap, want = (size_t)n + 1;

	if (n < *cap)
		return 0;
	if (reserve(arrp, &c, want > (size_t)first ? want : (size_t)first, elem))
		return -1;
	*cap = (int)c;
	return 0;
}

#endif
