use kennel_tests::Home;

#[tokio::test]
async fn first_start_writes_a_commented_config_and_the_database() {
    let home = Home::new();
    let daemon = home.start().await;
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("# max_agent_call_depth = 5"), "{config}");
    assert!(home.has_database());
    assert!(home.path().join("artifacts").is_dir());
    let (code, _) = daemon.stop().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn config_errors_stop_start_up_naming_file_and_line() {
    for (config, line, says) in [
        ("[kernel]\nmax_agent_call_depth = 5\nmax_depht = 3\n", 3, "unknown field `max_depht`"),
        ("[tool_results]\n\nspill_threshold_bytes = \"big\"\n", 3, "invalid type"),
        ("[kernel]\nmax_agent_call_depth = 0\n", 2, "from 1 to 64"),
        ("[browsr]\nenabled = true\n", 1, "unknown field `browsr`"),
        ("[a2a]\nallowed_hosts = [\"vm\"]\n", 2, "`vm` has no port: write `vm:PORT`"),
    ] {
        let home = Home::with_config(config);
        let out = home.cli(&["start", "--bind", "127.0.0.1:0"]).await;
        assert!(!out.status.success(), "{config}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let at = format!("config.toml:{line}:");
        assert!(stderr.contains(&at) && stderr.contains(says), "expected `{at}` and `{says}` in: {stderr}");
    }
}

#[tokio::test]
async fn a_taken_port_is_a_clear_error() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = holder.local_addr().unwrap().to_string();
    let home = Home::new();
    let out = home.cli(&["start", "--bind", &addr]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("cannot listen on {addr}")));
}
