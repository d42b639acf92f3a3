/*
 * The transport groups of one rank's shards (exec_groups.c), set up by
 * exec_layout() inside exec_create().
 */
#ifndef AUTOPAR_EXEC_GROUPS_H
#define AUTOPAR_EXEC_GROUPS_H

struct exec;

/* The replica groups of this rank's shards (gid), then the c-groups of
 * its c-split attentions (cg.gid); collective, after the shards are set
 * up. */
int exec_groups_setup(struct exec *e);
int exec_cgroups_setup(struct exec *e);

#endif
