//! Tests of the client that need no server.

use super::*;

#[test]
fn chunks_carry_offsets_the_name_once_and_finish_on_the_last() {
    let bytes: Vec<u8> = (0..(2 * CHUNK + 10)).map(|i| (i % 7) as u8).collect();
    let chunks = Chunks {
        source: Box::new(io::Cursor::new(bytes.clone())),
        resource: Some("uploads/u/blobs/h/2097162".into()),
        offset: 0,
        size: bytes.len() as u64,
        done: false,
        progress: Arc::new(Mutex::new((Instant::now(), None))),
    };
    let requests: Vec<WriteRequest> = chunks.collect();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].resource_name, "uploads/u/blobs/h/2097162");
    assert!(requests[1..].iter().all(|r| r.resource_name.is_empty()));
    let offsets: Vec<i64> = requests.iter().map(|r| r.write_offset).collect();
    assert_eq!(offsets, [0, CHUNK as i64, 2 * CHUNK as i64]);
    let finished: Vec<bool> = requests.iter().map(|r| r.finish_write).collect();
    assert_eq!(finished, [false, false, true]);
    let joined: Vec<u8> = requests.into_iter().flat_map(|r| r.data).collect();
    assert_eq!(joined, bytes);
}

#[test]
fn a_short_source_ends_the_stream_unfinished_and_keeps_the_error() {
    let chunks = Chunks {
        source: Box::new(io::Cursor::new(vec![1u8; 10])),
        resource: Some("r".into()),
        offset: 0,
        size: 20,
        done: false,
        progress: Arc::new(Mutex::new((Instant::now(), None))),
    };
    let progress = chunks.progress.clone();
    assert_eq!(chunks.count(), 0);
    assert!(progress.lock().unwrap().1.is_some());
}

#[test]
fn urls_other_than_grpc_are_refused_in_words() {
    let config = |url: &str| ClientConfig {
        url: url.into(),
        instance_name: String::new(),
        token: None,
        connect_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
        request_timeout: None,
    };
    assert!(Client::new(&config("grpc://127.0.0.1:1")).is_ok());
    assert!(Client::new(&config("grpcs://cache.example.com:443")).is_ok());
    let refused = Client::new(&config("http://127.0.0.1:1"))
        .err()
        .unwrap()
        .to_string();
    assert!(refused.contains("grpc://"), "{refused}");
    let bad_token = Client::new(&ClientConfig {
        token: Some("line\nbreak".into()),
        ..config("grpc://127.0.0.1:1")
    })
    .err()
    .unwrap()
    .to_string();
    assert!(!bad_token.contains("line"), "{bad_token}");
}

#[test]
fn an_output_that_cannot_be_written_names_its_path() {
    let client = Client::new(&ClientConfig {
        url: "grpc://127.0.0.1:1".into(),
        instance_name: String::new(),
        token: None,
        connect_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(1),
        request_timeout: None,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("no-such-dir/out.txt");
    let bytes = b"built\n";
    let error = client
        .save_inlined(&crate::digest_of(bytes), bytes, &dest, 1 << 20)
        .unwrap_err();
    assert!(matches!(error, Error::Io(_)), "{error:?}");
    assert!(
        error.to_string().contains(&dest.display().to_string()),
        "{error}"
    );
}
