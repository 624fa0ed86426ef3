//! Splitting one replay into shards that separate processes or hosts run: which clients a shard
//! replays, and which shard this process is when an orchestrator started it.
//!
//! A client (source address) belongs to exactly one shard, so all its queries, and its
//! connection reuse, stay in one process as the paper's same-source affinity requires. The
//! shard of a client depends only on its address and the shard count, never on the run, the
//! host or the version.

pub use ldplayer_results::shard_of;
use ldplayer_results::ShardId;

/// Why a shard could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not of the form `I/N` with I < N.
    #[error("bad shard `{0}`: give I/N with 0 <= I < N (shards count from 0), e.g. 0/3")]
    Syntax(String),
    /// `auto` found no orchestrator's variables.
    #[error(
        "--shard auto found no shard in the environment: set LDPLAYER_SHARD=I/N, or run as a \
         Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with the count in --shards or \
         LDPLAYER_SHARDS), a Slurm array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) or the \
         tasks of a Slurm job step started by srun (SLURM_PROCID, SLURM_STEP_NUM_TASKS)"
    )]
    NotFound,
    /// An orchestrator's variable holds something unusable.
    #[error("--shard auto: {0}")]
    Environment(String),
}

/// Parses `I/N` (shards count from 0).
pub fn parse_shard(s: &str) -> Result<ShardId, ShardError> {
    let bad = || ShardError::Syntax(s.to_string());
    let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(ShardId { index, count })
}

/// The shard this process is, from an orchestrator's environment, looked up through `var`
/// (`std::env::var` in the CLI; a map in tests). In order:
/// - `LDPLAYER_SHARD=I/N`;
/// - a Kubernetes Indexed Job: `JOB_COMPLETION_INDEX`, with the count from `count` (a flag)
///   or `LDPLAYER_SHARDS` (Kubernetes does not export the job's completions);
/// - a Slurm job array: `SLURM_ARRAY_TASK_ID` less `SLURM_ARRAY_TASK_MIN` (arrays may start at
///   1), of `SLURM_ARRAY_TASK_COUNT`;
/// - the tasks of a Slurm job step (`srun` in a job of `--ntasks=N`, which Slurm starts
///   together): `SLURM_PROCID` of `SLURM_STEP_NUM_TASKS`. Only inside a step: a batch script
///   has `SLURM_PROCID=0` of the job's tasks too, and is not a shard.
pub fn shard_from_env(
    var: impl Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> Result<ShardId, ShardError> {
    let number = |name: &str| -> Result<Option<u32>, ShardError> {
        match var(name) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                ShardError::Environment(format!("{name}={v:?} is not a whole number"))
            }),
        }
    };
    let checked = |index: u32, count: u32, from: &str| {
        if count == 0 || index >= count {
            Err(ShardError::Environment(format!(
                "{from} gives shard {index} of {count}, which does not exist"
            )))
        } else {
            Ok(ShardId { index, count })
        }
    };
    if let Some(v) = var("LDPLAYER_SHARD") {
        return parse_shard(&v)
            .map_err(|_| ShardError::Environment(format!("LDPLAYER_SHARD={v:?} is not I/N")));
    }
    if let Some(index) = number("JOB_COMPLETION_INDEX")? {
        let count = match count {
            Some(n) => n,
            None => number("LDPLAYER_SHARDS")?.ok_or_else(|| {
                ShardError::Environment(
                    "JOB_COMPLETION_INDEX is set but not the shard count: give --shards N or \
                     LDPLAYER_SHARDS (the job's completions)"
                        .into(),
                )
            })?,
        };
        return checked(index, count, "JOB_COMPLETION_INDEX");
    }
    if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let count = match count {
            Some(n) => n,
            None => number("SLURM_ARRAY_TASK_COUNT")?.ok_or_else(|| {
                ShardError::Environment(
                    "SLURM_ARRAY_TASK_ID is set but not SLURM_ARRAY_TASK_COUNT".into(),
                )
            })?,
        };
        let index = id.checked_sub(min).ok_or_else(|| {
            ShardError::Environment(format!(
                "SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"
            ))
        })?;
        return checked(index, count, "SLURM_ARRAY_TASK_ID");
    }
    if let Some(tasks) = number("SLURM_STEP_NUM_TASKS")? {
        let index = number("SLURM_PROCID")?.ok_or_else(|| {
            ShardError::Environment("SLURM_STEP_NUM_TASKS is set but not SLURM_PROCID".into())
        })?;
        return checked(index, count.unwrap_or(tasks), "SLURM_PROCID");
    }
    Err(ShardError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributor::stable_hash;
    use std::collections::HashMap;
    use std::net::IpAddr;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn parses_good_shards_and_refuses_the_rest() {
        assert_eq!(parse_shard("0/3"), Ok(ShardId { index: 0, count: 3 }));
        assert_eq!(parse_shard(" 2/3 "), Ok(ShardId { index: 2, count: 3 }));
        for bad in [
            "0/0", "5/3", "3/3", "junk", "1", "-1/3", "1/3/4", "/3", "1/",
        ] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_reads_each_orchestrator() {
        let ours = env(&[("LDPLAYER_SHARD", "1/4"), ("JOB_COMPLETION_INDEX", "3")]);
        assert_eq!(
            shard_from_env(ours, None),
            Ok(ShardId { index: 1, count: 4 })
        );
        let k8s = env(&[("JOB_COMPLETION_INDEX", "2"), ("LDPLAYER_SHARDS", "3")]);
        assert_eq!(
            shard_from_env(&k8s, None),
            Ok(ShardId { index: 2, count: 3 })
        );
        assert_eq!(
            shard_from_env(&k8s, Some(5)),
            Ok(ShardId { index: 2, count: 5 })
        );
        let k8s_no_count = env(&[("JOB_COMPLETION_INDEX", "2")]);
        assert!(matches!(
            shard_from_env(k8s_no_count, None),
            Err(ShardError::Environment(_))
        ));
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert_eq!(
            shard_from_env(slurm, None),
            Ok(ShardId { index: 2, count: 3 })
        );
        let slurm0 = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]);
        assert_eq!(
            shard_from_env(slurm0, None),
            Ok(ShardId { index: 0, count: 2 })
        );
        let beyond = env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert!(matches!(
            shard_from_env(beyond, None),
            Err(ShardError::Environment(_))
        ));
        let junk = env(&[("JOB_COMPLETION_INDEX", "x"), ("LDPLAYER_SHARDS", "3")]);
        assert!(matches!(
            shard_from_env(junk, None),
            Err(ShardError::Environment(_))
        ));
        assert_eq!(shard_from_env(env(&[]), None), Err(ShardError::NotFound));
    }

    #[test]
    fn the_tasks_of_a_slurm_step_are_shards_but_its_batch_script_is_not() {
        let step = env(&[
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "3"),
            ("SLURM_STEP_NUM_TASKS", "3"),
        ]);
        assert_eq!(
            shard_from_env(&step, None),
            Ok(ShardId { index: 2, count: 3 })
        );
        // The batch script of a job of 3 tasks: task 0 of the job, no step.
        let batch = env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "3")]);
        assert_eq!(shard_from_env(batch, None), Err(ShardError::NotFound));
        // An array task's own variables come first.
        let array_step = env(&[
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "1"),
        ]);
        assert_eq!(
            shard_from_env(array_step, None),
            Ok(ShardId { index: 1, count: 2 })
        );
        let beyond = env(&[("SLURM_PROCID", "3"), ("SLURM_STEP_NUM_TASKS", "3")]);
        assert!(matches!(
            shard_from_env(beyond, None),
            Err(ShardError::Environment(_))
        ));
    }

    #[test]
    fn shards_split_clients_evenly_and_apart_from_queriers() {
        let n = 3;
        let mut per_shard = [0u32; 3];
        // Within a shard, clients still spread over two queriers.
        let mut per_querier = [[0u32; 2]; 3];
        for i in 0..30_000u32 {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let s = shard_of(a, n) as usize;
            per_shard[s] += 1;
            per_querier[s][(stable_hash(a) % 2) as usize] += 1;
        }
        assert!(
            per_shard.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{per_shard:?}"
        );
        for q in per_querier {
            assert!(q.iter().all(|&c| c > 4_000), "{q:?}");
        }
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(shard_of(a, 5), shard_of(a, 5));
        assert_eq!(shard_of(a, 1), 0);
    }
}
