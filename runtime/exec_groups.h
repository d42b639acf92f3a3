/*
 * The transport groups of one rank's shards (exec_groups.c), set up by
 * exec_layout() inside exec_create().
 */
#ifndef AUTOPAR_EXEC_GROUPS_H
#define AUTOPAR_EXEC_GROUPS_H

struct exec;

/* Whether op i is a linear tied to an embedding on other ranks than the
 * embedding's (Megatron's embedding group, docs/plan-format.md): it holds
 * a copy of the embedding's weight, whose gradient its replica group
 * sums with the embedding's. */
int exec_tie_copy(const struct exec *e, int i);
/* The ranks, ascending, whose shards of op i hold the same parameters as
 * its shard of c index ci and tensor rank tr and sum their gradients:
 * its round-robin replicas' and n split's, and a tied linear's copies
 * with their embedding's; their number. */
int exec_param_members(const struct exec *e, int i, int ci, int tr, int *ranks);

/* The replica groups of this rank's shards (gid), then the c-groups of
 * its c-split attentions (cg.gid); collective, after the shards are set
 * up. */
int exec_groups_setup(struct exec *e);
int exec_cgroups_setup(struct exec *e);

#endif
