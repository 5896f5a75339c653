#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
//! Shutdown wakes every waiter, is seen by late clones, and fires on SIGTERM.

use std::time::Duration;

use netio::shutdown::{Shutdown, on_signals};
use tokio::time::timeout;

const WITHIN: Duration = Duration::from_secs(5);

#[tokio::test]
async fn waiting_tasks_wake_on_trigger() {
    let (trigger, shutdown) = Shutdown::new();
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let mut shutdown = shutdown.clone();
            tokio::spawn(async move { shutdown.wait().await })
        })
        .collect();
    // Nobody wakes before the trigger.
    tokio::task::yield_now().await;
    let mut early = shutdown.clone();
    assert!(
        timeout(Duration::from_millis(50), early.wait())
            .await
            .is_err()
    );
    assert!(!shutdown.is_triggered());
    assert!(tasks.iter().all(|t| !t.is_finished()));

    trigger.trigger();
    for task in tasks {
        timeout(WITHIN, task)
            .await
            .expect("a waiter did not wake")
            .unwrap();
    }
    assert!(shutdown.is_triggered());
    trigger.trigger(); // a second trigger is harmless
}

#[tokio::test]
async fn a_clone_made_after_the_trigger_sees_it_at_once() {
    let (trigger, shutdown) = Shutdown::new();
    trigger.trigger();
    let mut late = shutdown.clone();
    assert!(late.is_triggered());
    timeout(Duration::from_millis(1), late.wait())
        .await
        .expect("wait did not return at once");
    // And waiting twice on the same one returns again.
    timeout(Duration::from_millis(1), late.wait())
        .await
        .unwrap();
}

#[tokio::test]
async fn dropping_every_trigger_counts_as_shutdown() {
    let (trigger, shutdown) = Shutdown::new();
    let second = trigger.clone();
    drop(trigger);
    assert!(!shutdown.is_triggered(), "one trigger is still alive");
    drop(second);
    assert!(shutdown.is_triggered());
    let mut waiting = shutdown.clone();
    timeout(WITHIN, waiting.wait()).await.unwrap();
}

#[tokio::test]
async fn sigterm_to_this_process_triggers_shutdown() {
    let (trigger, mut shutdown) = Shutdown::new();
    // A second trigger stays alive, so only an explicit trigger (not the signal task
    // dropping its trigger) can wake us.
    let _kept = trigger.clone();
    // Installed before the signal is sent, so SIGTERM's default action (exit) is off.
    let task = on_signals(trigger).unwrap();
    assert!(!shutdown.is_triggered());
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    timeout(WITHIN, shutdown.wait())
        .await
        .expect("SIGTERM did not trigger shutdown");
    assert!(shutdown.is_triggered());
    timeout(WITHIN, task).await.unwrap().unwrap();
}

#[tokio::test]
async fn sighup_to_this_process_requests_a_reload_and_does_not_kill_it() {
    use netio::shutdown::{Reloads, on_reload};
    let (trigger, mut reloads) = Reloads::new();
    // Installed before the signal is sent, so SIGHUP's default action (exit) is off.
    let _task = on_reload(trigger).unwrap();
    for round in 1..=2 {
        let status = std::process::Command::new("kill")
            .args(["-HUP", &std::process::id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        timeout(WITHIN, reloads.next())
            .await
            .expect("SIGHUP did not request a reload");
        assert_eq!(reloads.requested(), round);
    }
}

#[tokio::test]
async fn reload_requests_made_meanwhile_are_merged() {
    use netio::shutdown::Reloads;
    let (trigger, mut reloads) = Reloads::new();
    trigger.trigger();
    trigger.trigger();
    timeout(WITHIN, reloads.next()).await.unwrap();
    assert_eq!(reloads.requested(), 2);
    // Nothing pending now: `next` waits until the next request.
    assert!(
        timeout(std::time::Duration::from_millis(50), reloads.next())
            .await
            .is_err()
    );
    trigger.trigger();
    timeout(WITHIN, reloads.next()).await.unwrap();
    assert_eq!(reloads.requested(), 3);
}
