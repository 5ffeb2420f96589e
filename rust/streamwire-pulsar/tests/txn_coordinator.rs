//! The transaction coordinator client against a scripted broker on a local socket: the
//! lookup of coordinator partitions, TC_CLIENT_CONNECT, retries of a coordinator that is
//! still loading (`TransactionCoordinatorNotFound`), giving up at the operation timeout, and
//! a cluster without coordinators (`NotSupported`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use streamwire_core::error::ErrorKind;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::connection::ConnectionConfig;
use streamwire_pulsar::protocol::pb::base_command::Type;
use streamwire_pulsar::protocol::{encode_command, pb, FrameDecoder};
use streamwire_pulsar::transaction::{Coordinator, TxnId, TxnState};

/// What the scripted broker does.
struct Script {
    partitions: u32,
    /// NEW_TXN answers with TransactionCoordinatorNotFound this many times first.
    not_ready: AtomicUsize,
    tc_connects: AtomicUsize,
    new_txns: AtomicUsize,
    ends: AtomicUsize,
    /// Close the connection instead of answering this many END_TXN requests.
    drop_ends: AtomicUsize,
}

fn cmd(kind: Type) -> pb::BaseCommand {
    let mut c = pb::BaseCommand::default();
    c.set_type(kind);
    c
}

fn answer(req: &pb::BaseCommand, url: &str, s: &Script) -> Option<pb::BaseCommand> {
    Some(match req.r#type() {
        Type::Connect => {
            let mut c = cmd(Type::Connected);
            c.connected = Some(Box::new(pb::CommandConnected {
                server_version: "scripted".into(),
                protocol_version: Some(21),
                ..Default::default()
            }));
            c
        }
        Type::PartitionedMetadata => {
            let r = req.partition_metadata.as_ref()?;
            let mut c = cmd(Type::PartitionedMetadataResponse);
            let mut body = pb::CommandPartitionedTopicMetadataResponse {
                request_id: r.request_id,
                partitions: Some(s.partitions),
                ..Default::default()
            };
            body.set_response(pb::command_partitioned_topic_metadata_response::LookupType::Success);
            c.partition_metadata_response = Some(Box::new(body));
            c
        }
        Type::Lookup => {
            let r = req.lookup_topic.as_ref()?;
            let mut c = cmd(Type::LookupResponse);
            let mut body = pb::CommandLookupTopicResponse {
                request_id: r.request_id,
                broker_service_url: Some(url.to_owned()),
                authoritative: Some(true),
                ..Default::default()
            };
            body.set_response(pb::command_lookup_topic_response::LookupType::Connect);
            c.lookup_topic_response = Some(Box::new(body));
            c
        }
        Type::TcClientConnectRequest => {
            let r = req.tc_client_connect_request.as_ref()?;
            s.tc_connects.fetch_add(1, Ordering::SeqCst);
            let mut c = cmd(Type::TcClientConnectResponse);
            c.tc_client_connect_response = Some(Box::new(pb::CommandTcClientConnectResponse {
                request_id: r.request_id,
                ..Default::default()
            }));
            c
        }
        Type::NewTxn => {
            let r = req.new_txn.as_ref()?;
            s.new_txns.fetch_add(1, Ordering::SeqCst);
            let not_ready = s
                .not_ready
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            let mut c = cmd(Type::NewTxnResponse);
            c.new_txn_response = Some(Box::new(if not_ready {
                pb::CommandNewTxnResponse {
                    request_id: r.request_id,
                    error: Some(20),
                    message: Some("coordinator is loading".into()),
                    ..Default::default()
                }
            } else {
                pb::CommandNewTxnResponse {
                    request_id: r.request_id,
                    txnid_most_bits: r.tc_id,
                    txnid_least_bits: Some(7),
                    ..Default::default()
                }
            }));
            c
        }
        Type::EndTxn => {
            let r = req.end_txn.as_ref()?;
            s.ends.fetch_add(1, Ordering::SeqCst);
            let mut c = cmd(Type::EndTxnResponse);
            c.end_txn_response = Some(Box::new(pb::CommandEndTxnResponse {
                request_id: r.request_id,
                txnid_most_bits: r.txnid_most_bits,
                txnid_least_bits: r.txnid_least_bits,
                ..Default::default()
            }));
            c
        }
        Type::Ping => cmd(Type::Pong),
        _ => return None,
    })
}

async fn serve(mut sock: TcpStream, url: String, s: Arc<Script>) {
    let mut dec = FrameDecoder::new(1 << 20);
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        while let Ok(Some(frame)) = dec.decode(&mut buf) {
            if frame.command.r#type() == Type::EndTxn
                && s.drop_ends
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
            {
                return; // the connection is lost with the request outstanding
            }
            if let Some(reply) = answer(&frame.command, &url, &s) {
                let mut out = BytesMut::new();
                encode_command(&reply, &mut out);
                if sock.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

async fn broker(partitions: u32, not_ready: usize) -> (String, Arc<Script>) {
    broker_dropping(partitions, not_ready, 0).await
}

async fn broker_dropping(
    partitions: u32,
    not_ready: usize,
    drop_ends: usize,
) -> (String, Arc<Script>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("pulsar://{}", listener.local_addr().unwrap());
    let script = Arc::new(Script {
        partitions,
        not_ready: AtomicUsize::new(not_ready),
        tc_connects: AtomicUsize::new(0),
        new_txns: AtomicUsize::new(0),
        ends: AtomicUsize::new(0),
        drop_ends: AtomicUsize::new(drop_ends),
    });
    let (u, s) = (url.clone(), Arc::clone(&script));
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve(sock, u.clone(), Arc::clone(&s)));
        }
    });
    (url, script)
}

fn client(url: &str, op_timeout: Duration) -> PulsarClient {
    let config = ConnectionConfig {
        operation_timeout: op_timeout,
        ..ConnectionConfig::default()
    };
    PulsarClient::new(url, config).unwrap()
}

#[tokio::test]
async fn a_loading_coordinator_is_retried_then_the_transaction_commits() {
    let (url, script) = broker(2, 3).await;
    let tc = Coordinator::new(client(&url, Duration::from_secs(10)));
    let t = tc.new_transaction(Duration::from_secs(60)).await.unwrap();
    assert_eq!(t.id(), TxnId { most: 0, least: 7 });
    assert_eq!(
        script.new_txns.load(Ordering::SeqCst),
        4,
        "3 refusals + 1 success"
    );
    assert_eq!(script.tc_connects.load(Ordering::SeqCst), 1);
    t.commit().await.unwrap();
    assert_eq!(t.state(), TxnState::Committed);
    // Round robin: the next transaction goes to coordinator 1 (its own TC connect).
    let t2 = tc.new_transaction(Duration::from_secs(60)).await.unwrap();
    assert_eq!(t2.id().most, 1);
    assert_eq!(script.tc_connects.load(Ordering::SeqCst), 2);
    t2.abort().await.unwrap();
    t2.abort().await.unwrap(); // no second END_TXN
    assert_eq!(script.ends.load(Ordering::SeqCst), 2);
    let e = t2.commit().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
}

#[tokio::test]
async fn a_coordinator_that_never_loads_fails_at_the_operation_timeout() {
    let (url, _script) = broker(1, usize::MAX).await;
    let tc = Coordinator::new(client(&url, Duration::from_millis(800)));
    let started = std::time::Instant::now();
    let e = tc
        .new_transaction(Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transaction, "{e}");
    assert!(
        e.message().contains("TransactionCoordinatorNotFound"),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_cluster_without_coordinators_is_not_supported() {
    let (url, _script) = broker(0, 0).await;
    let tc = Coordinator::new(client(&url, Duration::from_secs(5)));
    let e = tc
        .new_transaction(Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    let e = tc.new_transaction(Duration::ZERO).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn a_connection_lost_during_commit_is_retried_on_a_new_one() {
    let (url, script) = broker_dropping(1, 0, 1).await;
    let tc = Coordinator::new(client(&url, Duration::from_secs(10)));
    let t = tc.new_transaction(Duration::from_secs(60)).await.unwrap();
    t.commit().await.unwrap();
    assert_eq!(t.state(), TxnState::Committed);
    assert_eq!(
        script.ends.load(Ordering::SeqCst),
        1,
        "answered once, after the retry"
    );
    assert_eq!(
        script.tc_connects.load(Ordering::SeqCst),
        2,
        "reconnected to the coordinator"
    );
}
